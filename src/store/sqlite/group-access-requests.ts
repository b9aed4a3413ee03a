/**
 * Group access requests: RequestGroupAccess records that an identity asked to join a verified
 * organization, once (the (group, identity) primary key). The check and the insert run in one
 * BEGIN IMMEDIATE transaction, so two concurrent requests cannot both be recorded; the second
 * is RESOURCE_EXHAUSTED as the published API answers a repeat. No proto types enter here.
 */
import { and, eq } from "drizzle-orm";
import { notFound, resourceExhausted } from "../../errors/api-error.js";
import type { Db } from "./db.js";
import { groupCommit } from "./group-commit.js";
import { requireGroup } from "./references.js";
import { groupAccessRequests, identities } from "./schema.js";
import type { GroupAccessRequestsRepository } from "../group-access-requests.js";

export function createGroupAccessRequestsRepository(db: Db): GroupAccessRequestsRepository {
  const find = (tx: Db, groupUid: string, identityUid: string) =>
    tx
      .select({ groupUid: groupAccessRequests.groupUid })
      .from(groupAccessRequests)
      .where(and(eq(groupAccessRequests.groupUid, groupUid), eq(groupAccessRequests.identityUid, identityUid)))
      .get();

  return {
    async record(groupUid, identityUid, now) {
      await groupCommit(db, (tx) => {
        requireGroup(tx, groupUid);
        if (!tx.select({ uid: identities.uid }).from(identities).where(eq(identities.uid, identityUid)).get()) {
          throw notFound("identity", identityUid);
        }
        if (find(tx, groupUid, identityUid)) {
          throw resourceExhausted("access to this group was already requested");
        }
        tx.insert(groupAccessRequests).values({ groupUid, identityUid, createTime: now }).run();
      });
    },

    async has(groupUid, identityUid) {
      return find(db, groupUid, identityUid) !== undefined;
    },
  };
}
