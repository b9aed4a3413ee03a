/**
 * Storage ceilings measured in-process on the server core, in the same run as the HTTP
 * scenarios: what better-sqlite3 alone costs for the same List page (query + JSON.stringify,
 * the floor under "REST List page") and for one autocommit INSERT with synchronous=FULL
 * (the floor under CreateGroup writes/s). And the auth hooks alone: what token verification
 * adds to a call once its token has been verified (the ≤ 15 µs target), measured
 * without the network noise of the end-to-end peer difference.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { databaseFile, openDatabase } from "../../src/store/sqlite/db.js";
import { openStore } from "../../src/store/open.js";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { createAuthenticationHook } from "../../src/auth/authenticate.js";
import { createAuthorizationHook } from "../../src/auth/authorize.js";
import { buildPlans } from "../../src/auth/iam-plan.js";
import { loadSigningKeys } from "../../src/auth/signing-keys.js";
import { createTokenIssuer } from "../../src/auth/tokens.js";
import { GroupsService as GroupsV2 } from "../../gen/chainguard/platform/iam/v2/groups_pb.js";
import { CALLER } from "../../src/auth/caller.js";
import { CALL_META } from "../../src/observe/call-meta.js";
import { createRateLimits, DEFAULT_RATE_LIMITS } from "../../src/server/rate-limits.js";
import type { RawResult, RawTask } from "./control.js";
import type { HostConfig } from "./host.js";
import { pgInsert, pgLimit, pgQueryJson } from "./raw-pg.js";

export async function runRaw(task: RawTask, seconds: number, config: HostConfig): Promise<RawResult> {
  switch (task.kind) {
    case "query-json":
      return queryJson(task.sql, task.params, seconds, config);
    case "insert-full":
      return insertFull(seconds, config);
    case "auth-hooks":
      return authHooks(seconds, config, task.guarded === true);
    case "limit-hook":
      return limitHook(seconds);
    case "pg-limit":
      return pgLimit(seconds, required(config.databaseUrl));
    case "pg-query-json":
      return pgQueryJson(task.sql, task.params, seconds, required(config.databaseUrl));
    case "pg-insert":
      return pgInsert(task.connections, seconds, required(config.databaseUrl));
  }
}

function timed(seconds: number, op: () => void): RawResult {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  let ops = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) op();
    ops += 20;
  }
  const cpu = process.cpuUsage(cpu0);
  return { ops, seconds: (performance.now() - t0) / 1000, cpuUs: cpu.user + cpu.system };
}

function queryJson(sql: string, params: readonly (string | number)[], seconds: number, config: HostConfig): RawResult {
  const db = new Database(databaseFile(required(config.dataDir)), { readonly: true, fileMustExist: true });
  try {
    const stmt = db.prepare(sql);
    return timed(seconds, () => {
      JSON.stringify({ groups: stmt.all(...params) });
    });
  } finally {
    db.close();
  }
}

/** Single-row autocommit inserts into a scratch copy of the schema, with the server's pragmas. */
function insertFull(seconds: number, config: HostConfig): RawResult {
  const dir = fs.mkdtempSync(path.join(required(config.scratchDir), "raw-insert-"));
  const opened = openDatabase(dir);
  try {
    const client = opened.db.$client;
    if (client.pragma("synchronous", { simple: true }) !== 2) throw new Error("expected synchronous=FULL");
    const stmt = client.prepare(
      "INSERT INTO groups (uid, parent_uid, name, description, verified, kind, create_time, update_time) VALUES (?, NULL, ?, '', 0, 0, ?, ?)",
    );
    let n = 0;
    return timed(seconds, () => {
      const now = Date.now();
      stmt.run(randomBytes(20).toString("hex"), `raw-${n++}`, now, now);
    });
  } finally {
    opened.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function required(v: string | undefined): string {
  if (v === undefined) throw new Error("raw target: missing configuration");
  return v;
}

/**
 * authenticate + authorize (src/auth/) for GetGroup, as the call pipeline runs them, with an
 * operator token signed by the server's own key. The token is verified once before timing
 * (the cache's job); each timed call then reads the header as a fresh string (as the HTTP
 * parser hands it over, so the cache lookup hashes it anew) and awaits both hooks.
 * Read-only on the server's database: the keys are loaded, nothing is written.
 */
async function authHooks(seconds: number, config: HostConfig, guarded: boolean): Promise<RawResult> {
  const opened = await openStore({ dataDir: required(config.dataDir), access: "read-only" });
  try {
    const keys = await loadSigningKeys(opened.serverValues);
    if (!keys) throw new Error("the server has no signing keys yet");
    const url = "https://bench.invalid";
    const issuer = createTokenIssuer({ issuer: url, audience: url, keys: () => keys, now: Date.now });
    const token = await issuer.mint({ subject: "operator:bench", audience: url, ttlSeconds: 3600, operator: true });
    const headerBytes = Buffer.from(`Bearer ${token}`, "latin1");
    const plans = buildPlans([GroupsService]);
    const plain = createAuthenticationHook(issuer, plans);
    const authenticate = guarded ? createRateLimits(DEFAULT_RATE_LIMITS, new Set()).guardAuthentication(plain) : plain;
    const authorize = createAuthorizationHook({ plans, grantsOf: async () => [] });
    const method = GroupsService.method.getGroup;
    const request = { uid: "0".repeat(40) };
    const call = async () => {
      const context = {
        url: `${url}/${method.parent.typeName}/${method.name}`,
        protocolName: "grpc",
        requestHeader: { get: (name: string) => (name === "authorization" ? headerBytes.toString("latin1") : null) },
        values: createContextValues(),
      } as unknown as HandlerContext;
      await authenticate(method, context, request);
      await authorize(method, context, request);
    };
    await call(); // verifies and caches the token
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const until = t0 + seconds * 1000;
    let ops = 0;
    while (performance.now() < until) {
      for (let i = 0; i < 20; i++) await call();
      ops += 20;
    }
    const cpu = process.cpuUsage(cpu0);
    return { ops, seconds: (performance.now() - t0) / 1000, cpuUs: cpu.user + cpu.system };
  } finally {
    await opened.close();
  }
}

/**
 * The rate-limit hook of a limited read (v2 GetGroup) for one authenticated caller, with a
 * quota it never reaches, as the pipeline runs it: what a call on a limited version pays for
 * its count (the library's consume and the RateLimit headers).
 */
async function limitHook(seconds: number): Promise<RawResult> {
  const method = GroupsV2.method.getGroup;
  const limits = createRateLimits({ ...DEFAULT_RATE_LIMITS, reads: { points: 1e9, seconds: 60 } }, new Set());
  const hook = limits.limits.forMethod(method);
  if (!hook) throw new Error("v2 GetGroup has no rate limit");
  const caller = { subject: "operator:bench" };
  const call = async () => {
    const values = createContextValues().set(CALL_META, { requestId: "r", peer: "127.0.0.1", traceId: undefined });
    values.set(CALLER, caller as never);
    const context = { values, responseHeader: new Headers() } as unknown as HandlerContext;
    await hook(method, context, {});
  };
  await call();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  let ops = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) await call();
    ops += 20;
  }
  const cpu = process.cpuUsage(cpu0);
  return { ops, seconds: (performance.now() - t0) / 1000, cpuUs: cpu.user + cpu.system };
}
