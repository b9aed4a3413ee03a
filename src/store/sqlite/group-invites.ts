/**
 * GroupInvites repository: every read and write of the `group_invites` table, and redeeming
 * an invite into a role binding.
 *
 * The code, its hash and the redemption's checks are the same on every engine
 * (group-invite-rows.ts). Every check-then-write runs in one BEGIN IMMEDIATE transaction; errors are
 * ApiErrors; no proto types enter here.
 */
import { and, eq, sql } from "drizzle-orm";
import { notFound } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { grantView } from "./grant-view.js";
import { requireAssignableRole, requireGroup } from "./references.js";
import { allOf, type Bind, type JoinedSelect, preparedLists, uidpConditions, withinConditions } from "./list-query.js";
import { groupInvites, identities, roleBindings, roles } from "./schema.js";
import { newUidp } from "../uidp.js";
import { GROUP_INVITE_ORDERS, type GroupInviteListFilter, type GroupInvitesRepository } from "../group-invites.js";
import { groupInviteRecordOf as toRecord, inviteLookup, inviteNotFound, inviteToRedeem, newInviteCode, requireUnexpired } from "../group-invite-rows.js";

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

export function createGroupInvitesRepository(db: Db): GroupInvitesRepository {
  const read = (tx: Db) => tx.select(READ_COLUMNS).from(groupInvites).leftJoin(roles, eq(roles.uid, groupInvites.roleUid));
  const getStmt = read(db)
    .where(eq(groupInvites.uid, sql.placeholder("uid")))
    .prepare();

  const where = (f: GroupInviteListFilter, bind: Bind) =>
    allOf([
      ...uidpConditions(groupInvites.uid, groupInvites.parentUid, f.uidp, bind),
      f.keyId !== undefined ? eq(groupInvites.keyId, bind(f.keyId) as string) : undefined,
      withinConditions(groupInvites.uid, f.within, bind),
    ]);
  // list and count run statements prepared once per query shape (list-query.ts preparedLists).
  const lists = preparedLists(db, groupInvites, groupInvites.uid, "group_invites");

  return {
    async get(uid) {
      const row = getStmt.get({ uid });
      return row && toRecord(row);
    },

    async create(invite, now, guard) {
      return groupCommit(db, (tx) => {
        requireGroup(tx, invite.parentUid);
        requireAssignableRole(tx, invite.roleUid, invite.parentUid, "role_uid");
        guard?.(grantView(tx), invite.parentUid, invite.roleUid);
        const { keyId, code, codeHash } = newInviteCode();
        const uid = newUidp(invite.parentUid);
        tx.insert(groupInvites)
          .values({
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
          })
          .run();
        const row = read(tx).where(eq(groupInvites.uid, uid)).get();
        return { invite: toRecord(row as NonNullable<typeof row>), code };
      });
    },

    async delete(uid) {
      // Through group commit like every API write: it waits for the lock without blocking reads.
      const result = await groupCommit(db, (tx) => tx.delete(groupInvites).where(eq(groupInvites.uid, uid)).run());
      if (result.changes === 0) throw notFound("group invite", uid);
    },

    async list(filter, page) {
      const col = groupInvites[GROUP_INVITE_ORDERS.fields[page.order]];
      const rows = lists.joinedPage(
        (bind) => where(filter, bind),
        col,
        page,
        () => read(db) as unknown as JoinedSelect,
      );
      return (rows as ReturnType<typeof getStmt.all>).map(toRecord);
    },

    async count(filter) {
      return lists.count((bind) => where(filter, bind));
    },

    async redeemInvite(code, identityUid, now, judge) {
      return groupCommit(db, (tx) => {
        const lookup = inviteLookup(code);
        const invite = tx
          .select()
          .from(groupInvites)
          .where(and(eq(groupInvites.keyId, lookup.keyId), eq(groupInvites.codeHash, lookup.codeHash)))
          .get();
        if (!invite) throw inviteNotFound();
        requireUnexpired(invite, now);
        const identity = tx.select({ email: identities.email }).from(identities).where(eq(identities.uid, identityUid)).get();
        if (!identity) throw notFound("identity", identityUid);
        judge(grantView(tx), inviteToRedeem(invite, identity.email));
        const binding = { groupUid: invite.parentUid, identityUid, roleUid: invite.roleUid };
        const existing = tx
          .select({ uid: roleBindings.uid })
          .from(roleBindings)
          .where(and(eq(roleBindings.groupUid, binding.groupUid), eq(roleBindings.identityUid, identityUid), eq(roleBindings.roleUid, binding.roleUid)))
          .get();
        const bindingUid = existing?.uid ?? newUidp(invite.parentUid);
        if (!existing)
          tx.insert(roleBindings)
            .values({ uid: bindingUid, ...binding, createTime: now })
            .run();
        if (invite.singleUse) tx.delete(groupInvites).where(eq(groupInvites.uid, invite.uid)).run();
        return bindingUid;
      });
    },
  };
}
