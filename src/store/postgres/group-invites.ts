/**
 * Group invites on PostgreSQL: the GroupInvitesRepository contract (src/store/group-invites.ts),
 * answer for answer as SQLite's (src/store/sqlite/group-invites.ts; the code, the row layout and
 * the redemption's checks are shared, group-invite-rows.ts), with writers on several replicas
 * at once. Locks (iam-locks.ts), top-down (group, invite, identity, role, binding key):
 * - create locks the group FOR SHARE (no invite under a group being deleted) and the role it
 *   will grant FOR SHARE (`lockAssignableRole`: the role's delete waits and then finds the
 *   invite, RESOURCE_IN_USE; a change of its capabilities cannot slip between the escalation
 *   guard's judgement and the insert);
 * - redeemInvite finds the invite by its code, locks its group FOR SHARE, then the invite FOR
 *   UPDATE and reads it again: redemptions of one invite run one after the other, so a
 *   single-use invite is redeemed once (the second finds it deleted: NOT_FOUND, as on SQLite),
 *   and a delete of the invite waits for a redemption under way or makes it find nothing. The
 *   identity and the role are then read FOR SHARE (their deletes wait for the new binding and
 *   then see it; the role's capabilities stay what the judge saw), the judge runs (email,
 *   the creator's rights now), and the (group, identity, role) key is locked as CreateRoleBinding locks it
 *   (`lockBindingTriples`) before looking for an identical binding, so a redemption racing a
 *   CreateRoleBinding or another invite's redemption for the same triple reuses the one binding,
 *   never a unique-index error.
 * delete needs the invite's row lock as any DELETE does, so it waits for a redemption under way.
 */
import { and, eq } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import { groupInviteRecordOf, inviteLookup, inviteNotFound, inviteToRedeem, newInviteCode, requireUnexpired } from "../group-invite-rows.js";
import { GROUP_INVITE_ORDERS, type GroupInviteListFilter, type GroupInvitesRepository } from "../group-invites.js";
import { allOf, textEquals, uidpConditions, withinConditions } from "../list-predicates.js";
import { newUidp } from "../uidp.js";
import type { PgDb } from "./connection.js";
import { keysetLists } from "./list-query.js";
import { lockBindingTriples, lockParentGroup, lockRoleToGrant } from "./iam-locks.js";
import { groupInvites, identities, roleBindings, roles } from "./schema.js";
import { runGuard } from "./grant-view.js";
import { type Tx, writeTransaction } from "./transaction.js";

/** The columns every read selects: the invite without its code hash, and its current role. */
const READ_COLUMNS = {
  uid: groupInvites.uid,
  parentUid: groupInvites.parentUid,
  roleUid: groupInvites.roleUid,
  email: groupInvites.email,
  singleUse: groupInvites.singleUse,
  keyId: groupInvites.keyId,
  expirationTime: groupInvites.expirationTime,
  createTime: groupInvites.createTime,
  roleFound: roles.uid,
  roleName: roles.name,
  roleDescription: roles.description,
  roleCapabilities: roles.capabilities,
};

const read = (tx: Tx | PgDb) => tx.select(READ_COLUMNS).from(groupInvites).leftJoin(roles, eq(roles.uid, groupInvites.roleUid));

export function createPostgresGroupInvitesRepository(db: PgDb): GroupInvitesRepository {
  const where = (f: GroupInviteListFilter) =>
    allOf([
      ...uidpConditions(groupInvites.uid, groupInvites.parentUid, f.uidp),
      f.keyId !== undefined ? textEquals(groupInvites.keyId, f.keyId) : undefined,
      withinConditions(groupInvites.uid, f.within),
    ]);

  const lists = keysetLists(db, { table: groupInvites, orders: GROUP_INVITE_ORDERS, where, select: read, toRecord: groupInviteRecordOf });

  return {
    async get(uid) {
      const [row] = await read(db).where(eq(groupInvites.uid, uid));
      return row && groupInviteRecordOf(row);
    },

    async create(invite, now, guard) {
      return writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, invite.parentUid);
        await lockRoleToGrant(tx, invite.roleUid, invite.parentUid, "role_uid", guard);
        const { keyId, code, codeHash } = newInviteCode();
        const uid = newUidp(invite.parentUid);
        await tx.insert(groupInvites).values({
          uid,
          parentUid: invite.parentUid,
          roleUid: invite.roleUid,
          email: invite.email,
          singleUse: invite.singleUse,
          codeHash,
          keyId,
          expirationTime: now + invite.ttlMs,
          createTime: now,
          creator: invite.creator,
        });
        const [row] = await read(tx).where(eq(groupInvites.uid, uid));
        return { invite: groupInviteRecordOf(row as NonNullable<typeof row>), code };
      });
    },

    async delete(uid) {
      const deleted = await writeTransaction(db, (tx) => tx.delete(groupInvites).where(eq(groupInvites.uid, uid)).returning({ uid: groupInvites.uid }));
      if (deleted.length === 0) throw notFound("group invite", uid);
    },

    list: lists.list,
    count: lists.count,

    async redeemInvite(code, identityUid, now, judge) {
      return writeTransaction(db, async (tx) => {
        const lookup = inviteLookup(code);
        const byCode = and(eq(groupInvites.keyId, lookup.keyId), eq(groupInvites.codeHash, lookup.codeHash));
        // Unlocked, to learn the group: the group's lock comes before the invite's (see the header).
        const [found] = await tx.select({ parentUid: groupInvites.parentUid }).from(groupInvites).where(byCode).limit(1);
        if (!found) throw inviteNotFound();
        await lockParentGroup(tx, found.parentUid);
        const [invite] = await tx.select().from(groupInvites).where(byCode).limit(1).for("update");
        if (!invite) throw inviteNotFound(); // redeemed (single use) or deleted meanwhile
        requireUnexpired(invite, now);
        const [identity] = await tx.select({ email: identities.email }).from(identities).where(eq(identities.uid, identityUid)).for("share");
        if (!identity) throw notFound("identity", identityUid);
        // The invite holds the role (its delete is refused while the invite exists); locked so
        // that it stays, and its capabilities stay what the judge saw, until the binding is in.
        await tx.select({ uid: roles.uid }).from(roles).where(eq(roles.uid, invite.roleUid)).for("share");
        await runGuard(tx, judge, inviteToRedeem(invite, identity.email));
        const binding = { groupUid: invite.parentUid, identityUid, roleUid: invite.roleUid };
        await lockBindingTriples(tx, binding.groupUid, [binding]);
        const [existing] = await tx
          .select({ uid: roleBindings.uid })
          .from(roleBindings)
          .where(and(eq(roleBindings.groupUid, binding.groupUid), eq(roleBindings.identityUid, identityUid), eq(roleBindings.roleUid, binding.roleUid)));
        const bindingUid = existing?.uid ?? newUidp(invite.parentUid);
        if (!existing) await tx.insert(roleBindings).values({ uid: bindingUid, ...binding, createTime: now });
        if (invite.singleUse) await tx.delete(groupInvites).where(eq(groupInvites.uid, invite.uid));
        return bindingUid;
      });
    },
  };
}
