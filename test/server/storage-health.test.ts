/**
 * gRPC health follows the database: NOT_SERVING while it cannot be written (another
 * connection holds the write lock past the bound, the disk is full), SERVING again once it
 * can. Through the real server's health service, on the gRPC and Connect doors.
 */
import Database from "better-sqlite3";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { sqliteConnectionOf } from "../../src/store/sqlite/engine.js";
import { startTestApp } from "../support/app.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

describe("health follows whether the database can be written", () => {
  it("a write lock held elsewhere past the bound: NOT_SERVING (seen by Watch), SERVING once released", async () => {
    // A quiet server probes every 20 ms; a write waits at most 30 ms for the lock.
    const t = await startTestApp({}, { storageBusyMs: 30, storageProbeMs: 20 });
    const other = new Database(t.dbFile);
    const watching = new AbortController();
    try {
      const health = createClient(Health, createGrpcTransport({ baseUrl: t.url }));
      const updates = health.watch({ service: "" }, { signal: watching.signal })[Symbol.asyncIterator]();
      const next = async () => ((await updates.next()).value as { status: ServingStatus }).status;
      expect(await next()).toBe(ServingStatus.SERVING);
      other.exec("BEGIN IMMEDIATE");
      expect(await next()).toBe(ServingStatus.NOT_SERVING);
      // Reads still work meanwhile; only writes cannot.
      expect((await rest(t.url, "GET", "/iam/v2beta1/groups")).status).toBe(200);
      other.exec("ROLLBACK");
      expect(await next()).toBe(ServingStatus.SERVING);
    } finally {
      watching.abort();
      other.close();
      await t.close();
    }
  });

  it("a full disk: the failed write turns Check NOT_SERVING on every door; a write that succeeds turns it back", async () => {
    // No probe during the test: the outcome of the API's own writes is what is looked at.
    const t = await startTestApp({}, { storageProbeMs: 3_600_000 });
    const db = sqliteConnectionOf(t.app.store);
    try {
      const statuses = async () => Promise.all(rpcTransports.map(async (tr) => (await createClient(Health, tr.create(t.url)).check({ service: "" })).status));
      expect(await statuses()).toEqual(rpcTransports.map(() => ServingStatus.SERVING));
      const sqlite = db.$client;
      const room = sqlite.pragma("max_page_count", { simple: true }) as number;
      // No room to grow: the next page the database needs is refused with SQLITE_FULL.
      sqlite.pragma(`max_page_count = ${sqlite.pragma("page_count", { simple: true })}`);
      let refused: Awaited<ReturnType<typeof rest>> | undefined;
      for (let i = 0; i < 500 && !refused; i++) {
        const res = await rest(t.url, "POST", "/iam/v2beta1/groups", { name: `g ${i}`, description: "y".repeat(400) });
        if (res.status !== 200) refused = res;
      }
      expect(refused?.body.details[0].reason).toBe("STORAGE_FULL");
      expect(await statuses()).toEqual(rpcTransports.map(() => ServingStatus.NOT_SERVING));
      sqlite.pragma(`max_page_count = ${room}`);
      expect((await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "room again" })).status).toBe(200);
      expect(await statuses()).toEqual(rpcTransports.map(() => ServingStatus.SERVING));
    } finally {
      closeGrpcClients();
      await t.close();
    }
  });
});
