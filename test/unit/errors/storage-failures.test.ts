/**
 * Every engine-neutral storage failure kind becomes one answer, the same whichever engine
 * raised it (src/errors/to-connect-error.ts): the machine's conditions UNAVAILABLE, a lost
 * concurrency race ABORTED, text the engine cannot take INVALID_ARGUMENT, the rest INTERNAL; every one is handed back for the log, since the
 * operator wants to know, never sent.
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { StorageError, type StorageFailureKind } from "../../../src/errors/storage-error.js";
import { toConnectError } from "../../../src/errors/to-connect-error.js";

const EXPECTED: Record<StorageFailureKind, { code: Code; reason: string }> = {
  busy: { code: Code.Unavailable, reason: "STORAGE_BUSY" },
  full: { code: Code.Unavailable, reason: "STORAGE_FULL" },
  unavailable: { code: Code.Unavailable, reason: "STORAGE_UNAVAILABLE" },
  conflict: { code: Code.Aborted, reason: "STORAGE_CONFLICT" },
  corrupt: { code: Code.Internal, reason: "INTERNAL" },
  unique: { code: Code.Internal, reason: "INTERNAL" },
  "foreign-key": { code: Code.Internal, reason: "INTERNAL" },
  "unstorable-text": { code: Code.InvalidArgument, reason: "INVALID_ARGUMENT" },
};

describe("storage failures as the client sees them", () => {
  for (const [kind, want] of Object.entries(EXPECTED) as [StorageFailureKind, (typeof EXPECTED)[StorageFailureKind]][]) {
    it(`${kind}: ${Code[want.code]} with reason ${want.reason}, the cause kept for the log`, () => {
      const raised = new StorageError(kind, `engine detail for ${kind}`);
      const { error, unexpected } = toConnectError(raised, "iam.example.test");
      expect(error.code).toBe(want.code);
      expect(error.findDetails(ErrorInfoSchema)[0]?.reason).toBe(want.reason);
      // The engine's own words never reach the client.
      expect(error.rawMessage).not.toContain("engine detail");
      expect(unexpected).toBe(raised);
    });
  }
});
