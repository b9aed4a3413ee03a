/**
 * Group access requests on PostgreSQL: the GroupAccessRequestsRepository contract
 * (src/store/group-access-requests.ts), answer for answer as SQLite's
 * (src/store/sqlite/group-access-requests.ts), with writers on several replicas at once.
 * Locks (iam-locks.ts), top-down:
 * - the group, then the identity, FOR SHARE: a request is never recorded for a group or an
 *   identity whose delete is under way (the delete waits, and its cascade then removes the
 *   request; or the request waits and then finds nothing, NOT_FOUND naming which);
 * - once per (group, identity): INSERT … ON CONFLICT DO NOTHING on the primary key. Two
 *   replicas recording the same request at once: the second's insert waits for the first's
 *   commit, inserts nothing, and is RESOURCE_EXHAUSTED, as a repeat is on SQLite.
 */
import { and, eq } from "drizzle-orm";
import { notFound, resourceExhausted } from "../../errors/api-error.js";
import type { GroupAccessRequestsRepository } from "../group-access-requests.js";
import type { PgDb } from "./connection.js";
import { lockParentGroup } from "./iam-locks.js";
import { groupAccessRequests, identities } from "./schema.js";
import { writeTransaction } from "./transaction.js";

export function createPostgresGroupAccessRequestsRepository(db: PgDb): GroupAccessRequestsRepository {
  return {
    async record(groupUid, identityUid, now) {
      await writeTransaction(db, async (tx) => {
        await lockParentGroup(tx, groupUid);
        const [identity] = await tx.select({ uid: identities.uid }).from(identities).where(eq(identities.uid, identityUid)).for("share");
        if (!identity) throw notFound("identity", identityUid);
        const inserted = await tx
          .insert(groupAccessRequests)
          .values({ groupUid, identityUid, createTime: now })
          .onConflictDoNothing()
          .returning({ groupUid: groupAccessRequests.groupUid });
        if (inserted.length === 0) throw resourceExhausted("access to this group was already requested");
      });
    },

    async has(groupUid, identityUid) {
      const [row] = await db
        .select({ groupUid: groupAccessRequests.groupUid })
        .from(groupAccessRequests)
        .where(and(eq(groupAccessRequests.groupUid, groupUid), eq(groupAccessRequests.identityUid, identityUid)));
      return row !== undefined;
    },
  };
}
