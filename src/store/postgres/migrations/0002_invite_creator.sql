-- Who made each invite (src/auth/grant-guard.ts grantAuthor), judged again at every redemption
-- (src/services/iam/invite-redemption.ts); null on invites made before, which are then refused.
ALTER TABLE "group_invites" ADD COLUMN "creator" text COLLATE "C";
