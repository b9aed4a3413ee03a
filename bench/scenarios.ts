/**
 * The benchmark's scenarios (docs/performance.md), each with the ceiling it is compared to. GetGroup asks for the
 * same third-level group on every door, so the doors differ only in protocol handling.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { GetGroupRequestSchema, GroupsService } from "../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import type { RequestSpec } from "./load/types.js";
import type { RawTask } from "./targets/control.js";

export type TargetKind = "trellis" | "peer" | "peer-noauth" | "bare-h1" | "bare-h2" | "trellis-pg" | "trellis-pg-2";

/** The two Trellis replicas on PostgreSQL (`--database`): one process each, the first on the server core, the second on the generator's (run.ts). */
export const POSTGRES_REPLICAS: readonly TargetKind[] = ["trellis-pg", "trellis-pg-2"];

export interface LoadScenario {
  readonly id: string;
  readonly title: string;
  readonly target: TargetKind;
  readonly request: RequestSpec;
  /** The bare runtime ceiling of the same protocol (a scenario id). */
  readonly bare?: string;
  /** A second reference: the grpc-js peer or a raw storage ceiling (a scenario id). */
  readonly ref?: { readonly id: string; readonly metric: "cpu" | "rps" };
  /** A third one (PostgreSQL scenarios: their SQLite twin or their raw node-postgres ceiling). */
  readonly ref2?: { readonly id: string; readonly metric: "cpu" | "rps" };
  /**
   * The load goes to all these targets at once, split evenly (replicas behind a balancer); the
   * server CPU is the sum of theirs. Default: `target` alone.
   */
  readonly replicas?: readonly TargetKind[];
  /** The sample response must contain these bytes (proves it is the real answer, not an error). */
  readonly mustContain?: string;
  /** Set when the scenario cannot run in this bench run, with the reason. */
  readonly skip?: string;
}

export interface RawScenario {
  readonly id: string;
  readonly title: string;
  readonly task: RawTask;
}

export interface ScenarioInput {
  readonly getUid: string;
  readonly listOrg: string;
  readonly deepOrg: string;
  readonly writesOrg: string;
  /** Page tokens for the depth scenarios, by depth in rows; missing → skipped. */
  readonly depthTokens: ReadonlyMap<number, string>;
  readonly depths: readonly number[];
  /**
   * The operator token every call to Trellis and the peer carries, or why there is none
   * (then calls go without, and the auth-cost scenario is skipped).
   */
  readonly auth: { readonly token: string } | { readonly skip: string };
}

export const GETGROUP_RPC = `/${GroupsService.typeName}/GetGroup`;
export const PAGE_SIZE = 50;

/** A gRPC / gRPC-web data frame: flag byte, big-endian length, payload. */
export function frame(payload: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

export function listPath(filter: string, token?: string): string {
  return `/iam/v2beta1/groups?${filter}&page_size=${PAGE_SIZE}${token ? `&page_token=${encodeURIComponent(token)}` : ""}`;
}

export function loadScenarios(input: ScenarioInput): LoadScenario[] {
  const uid = input.getUid;
  const proto = Buffer.from(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid })));
  const json = Buffer.from(JSON.stringify({ uid }));
  const get = (over: Partial<RequestSpec>): RequestSpec => ({
    proto: "h1",
    method: "POST",
    path: GETGROUP_RPC,
    headers: {},
    success: "http",
    ...over,
  });
  const connectJson = { "content-type": "application/json", "connect-protocol-version": "1" };
  const connectProto = { "content-type": "application/proto", "connect-protocol-version": "1" };
  const grpc = { "content-type": "application/grpc", te: "trailers" };
  const restGet = get({ method: "GET", path: `/iam/v2beta1/groups/${uid}` });
  const h1 = { bare: "bare-h1" } as const;
  const h2 = { bare: "bare-h2" } as const;
  const vsPeer = { ref: { id: "grpc-peer-get", metric: "cpu" } } as const;
  const deep = `uidp.children_of=${input.deepOrg}`;

  const scenarios: LoadScenario[] = [
    // Ceilings first: every ratio refers to them.
    { id: "bare-h1", title: "bare node:http (same body)", target: "bare-h1", request: restGet },
    { id: "bare-h2", title: "bare node:http2 (same body)", target: "bare-h2", request: { ...restGet, proto: "h2" } },
    {
      id: "grpc-peer-get",
      title: "grpc-js peer GetGroup (gRPC)",
      target: "peer",
      request: get({ proto: "h2", headers: grpc, body: frame(proto), success: "grpc" }),
      ...h2,
      mustContain: uid,
    },
    // The doors.
    { id: "rest-get", title: "REST GetGroup", target: "trellis", request: restGet, ...h1, ...vsPeer, mustContain: uid },
    {
      id: "grpc-get",
      title: "gRPC GetGroup",
      target: "trellis",
      request: get({ proto: "h2", headers: grpc, body: frame(proto), success: "grpc" }),
      ...h2,
      ...vsPeer,
      mustContain: uid,
    },
    {
      // What the published Go SDK sends: a deadline on the call.
      id: "grpc-get-deadline",
      title: "gRPC GetGroup with grpc-timeout",
      target: "trellis",
      request: get({ proto: "h2", headers: { ...grpc, "grpc-timeout": "10S" }, body: frame(proto), success: "grpc" }),
      ...h2,
      ...vsPeer,
      mustContain: uid,
    },
    {
      id: "connect-json-h1-get",
      title: "Connect JSON h1 GetGroup",
      target: "trellis",
      request: get({ headers: connectJson, body: json }),
      ...h1,
      ...vsPeer,
      mustContain: uid,
    },
    {
      id: "connect-proto-h1-get",
      title: "Connect binary h1 GetGroup",
      target: "trellis",
      request: get({ headers: connectProto, body: proto }),
      ...h1,
      ...vsPeer,
      mustContain: uid,
    },
    {
      id: "connect-json-h2-get",
      title: "Connect JSON h2 GetGroup",
      target: "trellis",
      request: get({ proto: "h2", headers: connectJson, body: json }),
      ...h2,
      ...vsPeer,
      mustContain: uid,
    },
    {
      id: "connect-proto-h2-get",
      title: "Connect binary h2 GetGroup",
      target: "trellis",
      request: get({ proto: "h2", headers: connectProto, body: proto }),
      ...h2,
      ...vsPeer,
      mustContain: uid,
    },
    {
      id: "grpc-web-get",
      title: "gRPC-web GetGroup (h1)",
      target: "trellis",
      request: get({ headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" }, body: frame(proto), success: "grpc-web" }),
      ...h1,
      ...vsPeer,
      mustContain: uid,
    },
    {
      // The same peer without the auth hooks: the difference is what authentication and
      // authorization cost per call (an operator token: verified, cached, no binding lookup).
      id: "grpc-peer-get-noauth",
      title: "grpc-js peer GetGroup, no auth hooks",
      target: "peer-noauth",
      request: get({ proto: "h2", headers: grpc, body: frame(proto), success: "grpc" }),
      ...h2,
      ref: { id: "grpc-peer-get", metric: "cpu" },
      mustContain: uid,
      skip: "skip" in input.auth ? input.auth.skip : undefined,
    },
    {
      id: "rest-list",
      title: `REST ListGroups (${PAGE_SIZE}, descendants_of)`,
      target: "trellis",
      request: get({ method: "GET", path: listPath(`uidp.descendants_of=${input.listOrg}`) }),
      ...h1,
      ref: { id: "raw-list", metric: "cpu" },
      mustContain: input.listOrg,
    },
    ...input.depths.map((depth, i): LoadScenario => {
      const token = depth === 0 ? undefined : input.depthTokens.get(depth);
      return {
        id: `rest-list-depth-${i}`,
        title: `REST List at row ${depth === 0 ? 1 : depth.toLocaleString("en-US")}`,
        target: "trellis",
        request: get({ method: "GET", path: listPath(deep, token) }),
        ...h1,
        ref: { id: "raw-deep", metric: "cpu" },
        mustContain: input.deepOrg,
        skip: depth !== 0 && token === undefined ? `no page token reached row ${depth}` : undefined,
      };
    }),
    {
      id: "rest-create",
      title: "REST CreateGroup (synchronous=FULL)",
      target: "trellis",
      request: get({ path: `/iam/v2beta1/groups/${input.writesOrg}`, headers: { "content-type": "application/json" }, uniqueNameBody: '{"name":"w-NAME"}' }),
      ...h1,
      ref: { id: "raw-insert", metric: "rps" },
      mustContain: input.writesOrg,
    },
  ];
  if (!("token" in input.auth)) return scenarios;
  const authorization = `Bearer ${input.auth.token}`;
  return scenarios.map((s) =>
    s.target === "trellis" || s.target === "peer" ? { ...s, request: { ...s.request, headers: { ...s.request.headers, authorization } } } : s,
  );
}

export function rawScenarios(input: ScenarioInput): RawScenario[] {
  return [
    {
      id: "raw-list",
      title: "raw SQLite+JSON: the rest-list page",
      task: {
        kind: "query-json",
        sql: `SELECT * FROM groups WHERE uid > ? AND uid < ? ORDER BY uid LIMIT ${PAGE_SIZE + 1}`,
        params: [`${input.listOrg}/`, `${input.listOrg}0`],
      },
    },
    {
      id: "raw-deep",
      title: "raw SQLite+JSON: a keyset page of the deep org",
      task: {
        kind: "query-json",
        sql: `SELECT * FROM groups WHERE parent_uid = ? AND uid > ? ORDER BY uid LIMIT ${PAGE_SIZE + 1}`,
        params: [input.deepOrg, `${input.deepOrg}/8`],
      },
    },
    { id: "raw-insert", title: "raw SQLite INSERT, autocommit, synchronous=FULL", task: { kind: "insert-full" } },
    { id: "raw-auth", title: "auth hooks alone, verified operator token (per call)", task: { kind: "auth-hooks" } },
    {
      id: "raw-auth-guarded",
      title: "auth hooks with the failed-authentication guard, as trellis serve runs them (per call)",
      task: { kind: "auth-hooks", guarded: true },
    },
    { id: "raw-limit", title: "rate-limit hook of a limited read, counted in memory (per call)", task: { kind: "limit-hook" } },
  ];
}

/**
 * The same Trellis scenarios on PostgreSQL (`--database`), ids prefixed `pg-`: the GetGroup doors
 * against their SQLite twin and the raw node-postgres read of the same row, the Lists against the
 * raw node-postgres page (and their twin), CreateGroup against raw INSERTs and against itself on
 * two replicas at once.
 */
export function postgresScenarios(sqlite: readonly LoadScenario[]): LoadScenario[] {
  const twin = (s: LoadScenario, metric: "cpu" | "rps") => ({ id: s.id, metric });
  const out: LoadScenario[] = [];
  for (const s of sqlite) {
    if (s.target !== "trellis") continue;
    const pg = { ...s, id: `pg-${s.id}`, title: `PG ${s.title}`, target: "trellis-pg" as const };
    if (s.id === "rest-create") {
      out.push({ ...pg, ref: { id: "raw-pg-insert", metric: "rps" }, ref2: twin(s, "rps") });
      out.push({
        ...pg,
        id: "pg-rest-create-2",
        title: "PG REST CreateGroup, 2 replicas (CPU 0 + 1)",
        replicas: POSTGRES_REPLICAS,
        ref: { id: pg.id, metric: "rps" },
      });
    } else if (s.id === "rest-list") out.push({ ...pg, ref: { id: "raw-pg-list", metric: "cpu" }, ref2: twin(s, "cpu") });
    else if (s.id.startsWith("rest-list-depth-")) out.push({ ...pg, ref: { id: "raw-pg-deep", metric: "cpu" }, ref2: twin(s, "cpu") });
    else out.push({ ...pg, ref: twin(s, "cpu"), ref2: { id: "raw-pg-get", metric: "cpu" } });
  }
  return out;
}

/** The raw node-postgres ceilings of the PostgreSQL scenarios (the same rows as the SQLite ones). */
export function rawPostgresScenarios(input: ScenarioInput): RawScenario[] {
  return [
    {
      id: "raw-pg-get",
      title: "raw node-postgres+JSON: the GetGroup row",
      task: { kind: "pg-query-json", sql: "SELECT * FROM groups WHERE uid = $1", params: [input.getUid] },
    },
    {
      id: "raw-pg-list",
      title: "raw node-postgres+JSON: the rest-list page",
      task: {
        kind: "pg-query-json",
        sql: `SELECT * FROM groups WHERE uid > $1 AND uid < $2 ORDER BY uid LIMIT ${PAGE_SIZE + 1}`,
        params: [`${input.listOrg}/`, `${input.listOrg}0`],
      },
    },
    {
      id: "raw-pg-deep",
      title: "raw node-postgres+JSON: a keyset page of the deep org",
      task: {
        kind: "pg-query-json",
        sql: `SELECT * FROM groups WHERE parent_uid = $1 AND uid > $2 ORDER BY uid LIMIT ${PAGE_SIZE + 1}`,
        params: [input.deepOrg, `${input.deepOrg}/8`],
      },
    },
    { id: "raw-pg-insert", title: "raw node-postgres INSERT, autocommit, 10 clients", task: { kind: "pg-insert", connections: 10 } },
    { id: "raw-pg-limit", title: "a rate-limit count kept in PostgreSQL (rate-limiter-flexible's store), per call", task: { kind: "pg-limit" } },
  ];
}
