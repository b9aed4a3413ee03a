/**
 * Every unary method of every service the server registers, on every fast door, answers
 * exactly as connect-node does: gRPC over h2, gRPC-web over HTTP/1.1 and h2, Connect JSON and
 * Connect proto over HTTP/1.1 and h2. (fast-unary.test.ts goes deep on one method: body
 * hand-overs, compression, malformed deadlines; this file goes wide.)
 *
 * The methods are walked from the services create-app registers (routes.ts apiServices), so a
 * method added to a proto is compared without editing this file. Per method and door, three
 * cases, each sent to two servers that start from copies of one data directory — the
 * reference with the fast path off (connect-node serves every call), the other with it on:
 *
 * - answer: a request that succeeds where one can (SUCCESS below builds it in a world of
 *   resources made for that door; the answer must be OK, and again with a deadline that is
 *   met), otherwise a minimal valid request (path variables name nothing), whose answer
 *   (NOT_FOUND, INVALID_ARGUMENT, UNIMPLEMENTED for image content) is compared as it is;
 * - error: the minimal request with a before-call hook that throws an INVALID_ARGUMENT
 *   (src/errors/api-error.ts), so every method's error is written by every door, with details;
 * - deadline: a 1 ms deadline that passes while the hook waits on `context.signal` and throws
 *   its reason (DEADLINE_EXCEEDED), as a handler that honours the deadline does.
 *
 * Compared byte for byte: status, every response header, the body, the trailers and how the
 * stream ended, and the call-log line. Normalised, because they must differ between two
 * servers, and nothing else: `date` (the wall clock), a server-generated `x-request-id` (a
 * fresh UUID per request: the call log's `requestId` too), and in the log `time`, `pid`,
 * `hostname` and `ms`. What would also differ is made equal at its source instead: both servers
 * read one frozen clock (timestamps in answers), and `randomBytes` is a seeded sequence that
 * restarts at the same point for each server's copy of a request (new uids, invite codes), so
 * the two databases stay alike and every answer can be compared whole. (No case pages: page
 * tokens take their IVs from a pool drawn once and shared by both servers in this process, so
 * two servers' tokens would differ; a SUCCESS list must fit one page.)
 *
 * The fast server's test hook also proves the fast path served each call (its context is the
 * fast doors' lean one, LEAN_CONTEXT) and connect-node the reference's.
 */
import fs from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { type DescField, type DescMethodUnary, fromBinary, fromJson, type JsonObject, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { invalidArgument } from "../../src/errors/api-error.js";
import type { BeforeCallHook } from "../../src/server/call-pipeline.js";
import { DEFAULT_ERROR_DOMAIN } from "../../src/server/config.js";
import { type App, startApp } from "../../src/server/create-app.js";
import { LEAN_CONTEXT } from "../../src/server/fast-unary/shared.js";
import { apiServices } from "../../src/server/routes.js";
import type { ServiceContext } from "../../src/services/context.js";
import { createRouteTable } from "../../src/transcode/route-table.js";
import { operatorToken } from "../support/auth.js";
import { envelope, grpcWebTrailers } from "../support/raw-rpc.js";
import { seamsForNextApp } from "../support/seams.js";

/**
 * randomBytes as a seeded sequence (mulberry32) that `restart(n)` sets back to stream n. Only
 * the server's own modules see it (vitest mocks the module graph it loads, not node_modules).
 */
const seeded = vi.hoisted(() => {
  let state = 1;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return {
    restart(stream: number) {
      state = Math.imul(stream, 0x9e3779b1) | 0;
    },
    bytes(size: number): Buffer {
      const out = Buffer.alloc(size);
      for (let i = 0; i < size; i += 4) {
        const v = next();
        for (let j = 0; j < 4 && i + j < size; j++) out[i + j] = (v >>> (8 * j)) & 0xff;
      }
      return out;
    },
  };
});
vi.mock("node:crypto", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:crypto")>();
  const randomBytes = (size: number, callback?: (err: Error | null, buf: Buffer) => void) => {
    const buf = seeded.bytes(size);
    if (!callback) return buf;
    queueMicrotask(() => callback(null, buf));
    return undefined;
  };
  return { ...actual, default: { ...actual, randomBytes }, randomBytes };
});
// The test hook below, on both servers (test/support/seams.ts).
vi.mock(import("../../src/server/call-pipeline.js"), async (original) => (await import("../support/seams.js")).withCallHook(await original()));

// ---------------------------------------------------------------------------------------
// The methods

const entries = apiServices({ store: {} } as unknown as ServiceContext, {
  securityTokenService: { exchange: async () => ({}), exchangeRefreshToken: async () => ({}) },
});
const SERVICES = entries.map((e) => e.service);
const METHODS = SERVICES.flatMap((s) => s.methods.filter((m): m is DescMethodUnary => m.methodKind === "unary"));
/** GA (v2) methods carry their version: their short names are their v2beta1 twins'. */
const isGa = (m: DescMethodUnary) => /^chainguard\.platform\.\w+\.v2\./.test(m.parent.typeName);
const nameOf = (m: DescMethodUnary) => `${isGa(m) ? "v2 " : ""}${m.parent.name}/${m.name}`;
const byName = new Map(METHODS.map((m) => [nameOf(m), m]));
const methodNamed = (name: string) => {
  const m = byName.get(name);
  if (!m) throw new Error(`no unary method ${name}`);
  return m;
};

/**
 * The minimal valid request: every path variable of the method's HTTP rule holds a
 * well-formed value naming nothing (a UIDP, a digest, a package name), the rest unset.
 */
const NOBODY = `${"0".repeat(40)}/0123456789abcdef`;
const DIGEST = `sha256:${"ab".repeat(32)}`;
const routeTable = createRouteTable(SERVICES);
function minimalRequest(method: DescMethodUnary): JsonObject {
  const route = routeTable.routes.find((r) => r.method === method);
  const json: JsonObject = {};
  for (const chain of route?.variableFields ?? []) {
    let at = json;
    chain.slice(0, -1).forEach((f: DescField) => {
      at[f.jsonName] ??= {};
      at = at[f.jsonName] as JsonObject;
    });
    const leaf = chain[chain.length - 1] as DescField;
    at[leaf.jsonName] = leaf.name.includes("digest") ? DIGEST : leaf.name === "package" ? "openssl" : NOBODY;
  }
  return json;
}

/** The resources one door's successes work on (made through `both`, so alike on both servers). */
interface World {
  readonly org: string;
  readonly folder: string;
  readonly identity: string;
  readonly role: string;
  readonly binding: string;
  readonly repo: string;
  readonly tag: string;
  readonly idp: string;
  readonly invite: string;
}

/** `variant` keeps names unique between a case and its repeat with a deadline. */
type Build = (w: World, variant: string) => JsonObject | Promise<JsonObject>;

const CAPS = ["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"];
const OIDC = { issuer: "https://idp.example.test", clientId: "trellis", clientSecret: "s3cret", additionalScopes: [] };

/**
 * Requests that succeed, for the methods whose minimal request cannot (it names nothing).
 * Deletes get a victim of their own, made first.
 */
const SUCCESS: Partial<Record<string, Build>> = {
  "GroupsService/GetGroup": (w) => ({ uid: w.org }),
  "GroupsService/ListGroups": (w) => ({ uidp: { childrenOf: w.org } }),
  "GroupsService/CreateGroup": (w, v) => ({ parent: w.org, group: { name: `made ${v}` } }),
  "GroupsService/UpdateGroup": (w, v) => ({ group: { uid: w.folder, description: `changed ${v}` }, updateMask: "description" }),
  "GroupsService/DeleteGroup": async (w, v) => ({ uid: (await both("GroupsService/CreateGroup", { parent: w.org, group: { name: `doomed ${v}` } })).uid }),
  "IdentitiesService/GetIdentity": (w) => ({ uid: w.identity }),
  "IdentitiesService/ListIdentities": (w) => ({ uidp: { childrenOf: w.org } }),
  "IdentitiesService/CreateIdentity": (w, v) => ({ parent: w.org, identity: { name: `id ${v}`, claimMatch: { issuer: "https://ci.example", subject: v } } }),
  "IdentitiesService/UpdateIdentity": (w, v) => ({ identity: { uid: w.identity, description: v }, updateMask: "description" }),
  "IdentitiesService/DeleteIdentity": async (w, v) => ({
    uid: (
      await both("IdentitiesService/CreateIdentity", {
        parent: w.org,
        identity: { name: "doomed", claimMatch: { issuer: "https://ci.example", subject: `doomed ${v}` } },
      })
    ).uid,
  }),
  "RolesService/GetRole": (w) => ({ uid: w.role }),
  "RolesService/ListRoles": (w) => ({ uidp: { childrenOf: w.org } }),
  "RolesService/CreateRole": (w, v) => ({ parent: w.org, role: { name: `role ${v}`, capabilities: CAPS } }),
  "RolesService/UpdateRole": (w, v) => ({ role: { uid: w.role, description: v }, updateMask: "description" }),
  "RolesService/DeleteRole": async (w, v) => ({
    uid: (await both("RolesService/CreateRole", { parent: w.org, role: { name: `doomed ${v}`, capabilities: CAPS } })).uid,
  }),
  "RoleBindingsService/GetRoleBinding": (w) => ({ uid: w.binding }),
  "RoleBindingsService/ListRoleBindings": (w) => ({ uidp: { childrenOf: w.org } }),
  "RoleBindingsService/CreateRoleBinding": async (w, v) => ({
    parent: (await both("GroupsService/CreateGroup", { parent: w.org, group: { name: `binding ${v}` } })).uid,
    roleBinding: { identityUid: w.identity, roleUid: w.role },
  }),
  "RoleBindingsService/DeleteRoleBinding": async (w, v) => {
    const folder = (await both("GroupsService/CreateGroup", { parent: w.org, group: { name: `bound ${v}` } })).uid;
    return { uid: (await both("RoleBindingsService/CreateRoleBinding", { parent: folder, roleBinding: { identityUid: w.identity, roleUid: w.role } })).uid };
  },
  "IdentityProvidersService/GetIdentityProvider": (w) => ({ uid: w.idp }),
  "IdentityProvidersService/ListIdentityProviders": (w) => ({ uidp: { childrenOf: w.org } }),
  "IdentityProvidersService/CreateIdentityProvider": (w, v) => ({ parent: w.org, identityProvider: { name: `idp ${v}`, defaultRole: w.role, oidc: OIDC } }),
  "GroupInvitesService/GetGroupInvite": (w) => ({ uid: w.invite }),
  "GroupInvitesService/ListGroupInvites": (w) => ({ uidp: { childrenOf: w.org } }),
  "GroupInvitesService/CreateGroupInvite": (w) => ({ parent: w.org, groupInvite: { roleUid: w.role, ttl: "3600s" } }),
  "ReposService/GetRepo": (w) => ({ uid: w.repo }),
  "ReposService/ListRepos": (w) => ({ uidp: { childrenOf: w.org } }),
  "ReposService/CreateRepo": (w, v) => ({ parent: w.org, repo: { name: `repo-${v}` } }),
  "ReposService/UpdateRepo": (w, v) => ({ repo: { uid: w.repo, description: v }, updateMask: "description" }),
  "ReposService/UpdateRepoReadme": (w, v) => ({ repoReadme: { uid: w.repo, content: `# ${v}` } }),
  "ReposService/GetRepoReadme": (w) => ({ uid: w.repo }),
  "ReposService/DeleteRepo": async (w, v) => ({ uid: (await both("ReposService/CreateRepo", { parent: w.org, repo: { name: `doomed-${v}` } })).uid }),
  "TagsService/GetTag": (w) => ({ uid: w.tag }),
  "TagsService/ListTags": (w) => ({ uidp: { childrenOf: w.repo } }),
  "TagsService/CreateTag": (w, v) => ({ parent: w.repo, tag: { name: `t-${v}`, digest: DIGEST } }),
  "TagsService/DeleteTag": async (w, v) => ({
    uid: (await both("TagsService/CreateTag", { parent: w.repo, tag: { name: `doomed-${v}`, digest: DIGEST } })).uid,
  }),
  "IdentityProvidersService/UpdateIdentityProvider": (w, v) => ({ identityProvider: { uid: w.idp, description: v }, updateMask: "description" }),
  "IdentityProvidersService/DeleteIdentityProvider": async (w, v) => ({
    uid: (
      await both("IdentityProvidersService/CreateIdentityProvider", {
        parent: w.org,
        identityProvider: { name: `doomed ${v}`, defaultRole: w.role, oidc: OIDC },
      })
    ).uid,
  }),
  "IdentityProvidersService/GenerateScimToken": async (w, v) => ({
    identityProviderUid: (
      await both("IdentityProvidersService/CreateIdentityProvider", { parent: w.org, identityProvider: { name: `scim ${v}`, defaultRole: w.role, oidc: OIDC } })
    ).uid,
    neverExpires: true,
  }),
  "IdentityProvidersService/RevokeScimToken": async (w, v) => {
    const idp = (
      await both("IdentityProvidersService/CreateIdentityProvider", {
        parent: w.org,
        identityProvider: { name: `revoked ${v}`, defaultRole: w.role, oidc: OIDC },
      })
    ).uid;
    await both("IdentityProvidersService/GenerateScimToken", { identityProviderUid: idp, neverExpires: true });
    return { identityProviderUid: idp };
  },
  "GroupInvitesService/DeleteGroupInvite": async (w) => ({
    uid: (await both("GroupInvitesService/CreateGroupInvite", { parent: w.org, groupInvite: { roleUid: w.role, ttl: "3600s" } })).uid,
  }),
  "RoleBindingsService/BatchCreateRoleBindings": async (w, v) => {
    const parent = (await both("GroupsService/CreateGroup", { parent: w.org, group: { name: `batch ${v}` } })).uid;
    return { parent, requests: [{ parent, roleBinding: { identityUid: w.identity, roleUid: w.role } }] };
  },
  "Groups/Create": (w, v) => ({ parent: w.org, group: { name: `v1 ${v}` } }),
  "Groups/Delete": async (w, v) => ({ id: (await both("GroupsService/CreateGroup", { parent: w.org, group: { name: `v1 doomed ${v}` } })).uid }),
  "Groups/List": (w) => ({ uidp: { childrenOf: w.org } }),
  "Registry/CreateRepo": (w, v) => ({ parentId: w.org, repo: { name: `v1-${v}` } }),
  "Registry/CreateTag": (w, v) => ({ repoId: w.repo, tag: { name: `v1-${v}`, digest: DIGEST } }),
  "Registry/DeleteRepo": async (w, v) => ({ id: (await both("ReposService/CreateRepo", { parent: w.org, repo: { name: `v1-doomed-${v}` } })).uid }),
  "Registry/DeleteTag": async (w, v) => ({
    id: (await both("TagsService/CreateTag", { parent: w.repo, tag: { name: `v1-doomed-${v}`, digest: DIGEST } })).uid,
  }),
  "Registry/GetRepoTagsSummary": (w) => ({ repoId: w.repo }),
  "Registry/UpdateRepo": (w) => ({ id: w.repo, name: "nginx" }),
  "Registry/UpdateTag": (w) => ({ id: w.tag, name: "latest", digest: DIGEST }),
  "Registry/UpdateRegistrySettings": (w) => ({ registryId: w.org }),
  "Registry/CreateDeployment": async (w, v) => ({
    parentId: (await both("ReposService/CreateRepo", { parent: w.org, repo: { name: `deployed-${v}` } })).uid,
    charts: [{ source: "https://github.com/example/charts", repo: "https://charts.example", chart: "nginx" }],
  }),
  "Registry/UpdateDeployment": async (w, v) => {
    const repoId = (await both("ReposService/CreateRepo", { parent: w.org, repo: { name: `redeployed-${v}` } })).uid;
    await both("Registry/CreateDeployment", {
      parentId: repoId,
      charts: [{ source: "https://github.com/example/charts", repo: "https://charts.example", chart: "nginx" }],
    });
    return { repoId, charts: [{ source: "https://github.com/example/charts", repo: "https://charts.example", chart: "nginx-2" }] };
  },
  "Registry/GetDeployment": async (w, v) => {
    const repoId = (await both("ReposService/CreateRepo", { parent: w.org, repo: { name: `shown-${v}` } })).uid;
    await both("Registry/CreateDeployment", {
      parentId: repoId,
      charts: [{ source: "https://github.com/example/charts", repo: "https://charts.example", chart: "nginx" }],
    });
    return { repoId };
  },
  "Groups/Update": (w) => ({ id: w.folder, name: "folder" }),
  "RoleBindingsService/UpdateRoleBinding": (w) => ({ roleBinding: { uid: w.binding, roleUid: w.role }, updateMask: "roleUid" }),
  "Registry/ListTagHistory": (w) => ({ parentId: w.tag }),
  "Registry/ListRepos": (w) => ({ uidp: { childrenOf: w.org } }),
  "Registry/ListTags": (w) => ({ uidp: { childrenOf: w.repo } }),
  "Registry/GetRegistrySettings": (w) => ({ registryId: w.org }),
};

// ---------------------------------------------------------------------------------------
// Two servers

interface Observation {
  readonly lean: boolean;
  readonly aborted?: boolean;
  readonly reason?: string;
}

interface Server {
  readonly app: App;
  readonly lines: Record<string, unknown>[];
  readonly seen: Observation[];
  session?: http2.ClientHttp2Session;
  /** HTTP/1.1 connections kept open between requests (one at a time, in order). */
  agent?: http.Agent;
}

/** The hook's cap on waiting for a deadline, so an ignored one fails the case instead of hanging it. */
const HONOR_CAP_MS = 2000;

/**
 * A call hook (test/support/seams.ts), on request (`x-test-hook`): "fail" throws an
 * INVALID_ARGUMENT; "honor" waits on `context.signal` and throws its reason. Records the
 * context each door built either way.
 */
function testHook(seen: Observation[]): BeforeCallHook {
  return async (_method, context) => {
    const lean = LEAN_CONTEXT in context;
    const mode = context.requestHeader.get("x-test-hook");
    if (mode === "fail") {
      seen.push({ lean });
      throw invalidArgument([{ field: "test_hook", description: "refused by the test hook" }]);
    }
    if (mode === "honor") {
      const signal = context.signal;
      // The fast path arms the deadline when `signal` is first read: one already passed
      // aborts it at once, before a listener could be added.
      if (!signal.aborted)
        await new Promise<void>((resolve) => {
          const cap = setTimeout(resolve, HONOR_CAP_MS);
          signal.addEventListener("abort", () => {
            clearTimeout(cap);
            resolve();
          });
        });
      const reason = signal.reason instanceof ConnectError ? `${Code[signal.reason.code]}: ${signal.reason.message}` : String(signal.reason);
      seen.push({ lean, aborted: signal.aborted, reason });
      if (signal.aborted) throw signal.reason;
      return;
    }
    seen.push({ lean });
  };
}

/** One frozen clock for both servers: the timestamps they write are alike. */
const CLOCK = Date.now();

async function start(dataDir: string, fastUnary: boolean): Promise<Server> {
  const lines: Record<string, unknown>[] = [];
  const seen: Observation[] = [];
  const sink = { write: (line: string) => void lines.push(JSON.parse(line)) };
  seamsForNextApp({ callHook: testHook(seen) });
  const app = await startApp(
    { host: "127.0.0.1", port: 0, dataDir, errorDomain: DEFAULT_ERROR_DOMAIN, logLevel: "info", issuerUrl: "http://trellis.test" },
    { log: pino({ level: "info" }, sink), fastUnary, now: () => CLOCK },
  );
  return { app, lines, seen };
}

let dataDirs: string[] = [];
let reference: Server;
let fast: Server;
let token: string;

beforeAll(async () => {
  // In memory where the system has it: the fsyncs of some 1500 writes are not what this file
  // compares, and on disk they were most of its time.
  const base = fs.existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir();
  const seedDir = fs.mkdtempSync(path.join(base, "trellis-every-method-"));
  const copyDir = fs.mkdtempSync(path.join(base, "trellis-every-method-"));
  dataDirs = [seedDir, copyDir];
  // The first start writes the keys; the copy gets the same ones.
  seeded.restart(-1);
  const seeder = await start(seedDir, false);
  await seeder.app.close();
  fs.cpSync(seedDir, copyDir, { recursive: true });
  reference = await start(seedDir, false);
  fast = await start(copyDir, true);
  token = await operatorToken(seedDir);
});

afterAll(async () => {
  for (const s of [reference, fast]) {
    s?.session?.close();
    s?.agent?.destroy();
    await s?.app.close();
  }
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------
// The wire

interface Wire {
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
  readonly trailers: Record<string, string | string[]>;
  readonly rstCode: number | undefined;
}

/** A request id the server generated: a fresh UUID per request, so it must differ. */
const GENERATED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sameIfGenerated = (id: unknown) => (typeof id === "string" && GENERATED_ID.test(id) ? "<generated>" : id);

function strip(h: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    if (k === "date" || k === ":status" || v === undefined) continue;
    out[k] = (k === "x-request-id" ? sameIfGenerated(v) : v) as string | string[];
  }
  return out;
}

function sendH2(server: Server, p: string, headers: Record<string, string>, body: Buffer): Promise<Wire> {
  server.session ??= http2.connect(server.app.url);
  const session = server.session;
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": p, ...headers });
    let status = 0;
    let head: Record<string, string | string[]> = {};
    let trailers: Record<string, string | string[]> = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      status = Number(h[":status"]);
      head = strip(h);
    });
    req.on("trailers", (h) => {
      trailers = strip(h);
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", reject);
    req.on("close", () => resolve({ status, headers: head, body: Buffer.concat(chunks).toString("hex"), trailers, rstCode: req.rstCode }));
    req.end(body);
  });
}

function sendH1(server: Server, p: string, headers: Record<string, string>, body: Buffer): Promise<Wire> {
  const u = new URL(server.app.url);
  server.agent ??= new http.Agent({ keepAlive: true, maxSockets: 1 });
  const agent = server.agent;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method: "POST", path: p, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: strip(res.headers),
          body: Buffer.concat(chunks).toString("hex"),
          trailers: strip(res.trailers),
          rstCode: undefined,
        }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

interface Door {
  readonly name: string;
  readonly version: "1.1" | "2";
  readonly headers: Record<string, string>;
  /** The deadline header with a value in milliseconds. */
  deadline(ms: number): Record<string, string>;
  encode(method: DescMethodUnary, json: JsonObject): Buffer;
  /** The answer's status code (0 = OK) and whether its first detail is ErrorInfo. */
  outcome(wire: Wire): { code: number; errorInfoFirst: boolean };
}

function grpcOutcome(trailers: Record<string, string | string[]>) {
  const bin = trailers["grpc-status-details-bin"];
  const first = typeof bin === "string" ? fromBinary(StatusSchema, Buffer.from(bin, "base64")).details[0] : undefined;
  return { code: Number(trailers["grpc-status"]), errorInfoFirst: first?.typeUrl === "type.googleapis.com/google.rpc.ErrorInfo" };
}

const grpcTimeout = (ms: number) => ({ "grpc-timeout": `${ms}m` });
const binary = (method: DescMethodUnary, json: JsonObject) => Buffer.from(toBinary(method.input, fromJson(method.input, json)));

const grpcDoor: Door = {
  name: "gRPC h2",
  version: "2",
  headers: { "content-type": "application/grpc", te: "trailers" },
  deadline: grpcTimeout,
  encode: (m, json) => envelope(binary(m, json)),
  outcome: (wire) => grpcOutcome(Object.keys(wire.trailers).length > 0 ? wire.trailers : wire.headers),
};

const grpcWebDoor = (version: "1.1" | "2"): Door => ({
  name: `gRPC-web HTTP/${version}`,
  version,
  headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
  deadline: grpcTimeout,
  encode: (m, json) => envelope(binary(m, json)),
  outcome: (wire) => grpcOutcome(grpcWebTrailers(Buffer.from(wire.body, "hex"))),
});

const connectDoor = (version: "1.1" | "2", codec: "json" | "proto"): Door => ({
  name: `Connect ${codec} HTTP/${version}`,
  version,
  headers: { "content-type": `application/${codec}`, "connect-protocol-version": "1" },
  deadline: (ms) => ({ "connect-timeout-ms": String(ms) }),
  encode: (m, json) => (codec === "json" ? Buffer.from(toJsonString(m.input, fromJson(m.input, json))) : binary(m, json)),
  outcome(wire) {
    if (wire.status === 200) return { code: 0, errorInfoFirst: false };
    const error = JSON.parse(Buffer.from(wire.body, "hex").toString("utf8")) as { code: string; details?: { type: string }[] };
    const code = Code[error.code.replace(/(^|_)([a-z])/g, (_s, _u, c: string) => c.toUpperCase()) as keyof typeof Code] as number;
    return { code, errorInfoFirst: error.details?.[0]?.type === "google.rpc.ErrorInfo" };
  },
});

const DOORS: Door[] = [
  grpcDoor,
  grpcWebDoor("1.1"),
  grpcWebDoor("2"),
  connectDoor("1.1", "json"),
  connectDoor("2", "json"),
  connectDoor("1.1", "proto"),
  connectDoor("2", "proto"),
];

/** Each pair of requests gets its own random stream, the same for both servers. */
let stream = 0;

/** The call-log lines since `from`, without what must differ (see the header comment). */
function logSince(server: Server, from: number) {
  return server.lines
    .slice(from)
    .map(({ time, pid, hostname, ms, ...rest }) => ("requestId" in rest ? { ...rest, requestId: sameIfGenerated(rest.requestId) } : rest));
}

interface Compared {
  readonly wire: Wire;
  readonly outcome: { code: number; errorInfoFirst: boolean };
  /** What the fast server's hook saw (the reference's saw the same, built by connect-node). */
  readonly seen: Observation[];
}

/** Sends one request to both servers through `door`; the two answers must be equal. */
async function same(door: Door, method: DescMethodUnary, json: JsonObject, extra: Record<string, string> = {}): Promise<Compared> {
  const headers = { ...door.headers, authorization: `Bearer ${token}`, ...extra };
  const body = door.encode(method, json);
  const p = `/${method.parent.typeName}/${method.name}`;
  const send = door.version === "2" ? sendH2 : sendH1;
  const marks = [reference, fast].map((s) => ({ lines: s.lines.length, seen: s.seen.length }));
  const n = stream++;
  seeded.restart(n);
  const expected = await send(reference, p, headers, body);
  seeded.restart(n);
  const actual = await send(fast, p, headers, body);
  expect(actual).toEqual(expected);
  expect(logSince(fast, marks[1].lines)).toEqual(logSince(reference, marks[0].lines));
  const refSeen = reference.seen.slice(marks[0].seen);
  const fastSeen = fast.seen.slice(marks[1].seen);
  // connect-node built the reference's context, the fast path the other's, alike otherwise.
  expect(refSeen.map((o) => ({ ...o, lean: true }))).toEqual(fastSeen);
  expect(refSeen.every((o) => !o.lean)).toBe(true);
  return { wire: expected, outcome: door.outcome(expected), seen: fastSeen };
}

/**
 * Setup through Connect JSON over h2 on both servers alike (same random stream): the
 * answer's JSON. Must succeed.
 */
async function both(name: string, json: JsonObject): Promise<{ uid: string } & JsonObject> {
  const door = DOORS[4];
  const r = await same(door, methodNamed(name), json);
  expect(r.outcome.code, `${name}: ${Buffer.from(r.wire.body, "hex").toString()}`).toBe(0);
  return JSON.parse(Buffer.from(r.wire.body, "hex").toString("utf8")) as { uid: string } & JsonObject;
}

async function makeWorld(label: string): Promise<World> {
  const org = (await both("GroupsService/CreateGroup", { group: { name: `door ${label}` } })).uid;
  const folder = (await both("GroupsService/CreateGroup", { parent: org, group: { name: "folder" } })).uid;
  const identity = (
    await both("IdentitiesService/CreateIdentity", {
      parent: org,
      identity: { name: "ci builder", claimMatch: { issuer: "https://ci.example", subject: "ci" } },
    })
  ).uid;
  const role = (await both("RolesService/CreateRole", { parent: org, role: { name: "custom", capabilities: CAPS } })).uid;
  const binding = (await both("RoleBindingsService/CreateRoleBinding", { parent: org, roleBinding: { identityUid: identity, roleUid: role } })).uid;
  const repo = (await both("ReposService/CreateRepo", { parent: org, repo: { name: "nginx" } })).uid;
  const tag = (await both("TagsService/CreateTag", { parent: repo, tag: { name: "latest", digest: DIGEST } })).uid;
  const idp = (
    await both("IdentityProvidersService/CreateIdentityProvider", { parent: org, identityProvider: { name: "corp", defaultRole: role, oidc: OIDC } })
  ).uid;
  const invite = (await both("GroupInvitesService/CreateGroupInvite", { parent: org, groupInvite: { roleUid: role, ttl: "3600s" } })).uid;
  return { org, folder, identity, role, binding, repo, tag, idp, invite };
}

// ---------------------------------------------------------------------------------------
// The cases

const GENEROUS_MS = 30_000;

describe.each(DOORS.map((d) => [d.name, d] as const))("fast %s answers every unary method exactly as connect-node", (_label, door) => {
  let world: World;
  beforeAll(async () => {
    world = await makeWorld(String(DOORS.indexOf(door)));
  });

  it.each(METHODS.map((m) => [nameOf(m), m] as const))("%s: answer, error, deadline", async (name, method) => {
    // A GA method succeeds with its twin's request (under names of its own).
    const twinBuild = SUCCESS[name.replace(/^v2 /, "")];
    const build: Build | undefined = twinBuild && isGa(method) ? (w, v) => twinBuild(w, `v2-${v}`) : twinBuild;
    const minimal = minimalRequest(method);

    // answer (a success where SUCCESS has one), then the same with a deadline that is met.
    const answer = await same(door, method, build ? await build(world, "a") : minimal);
    // The operator passes authentication and authorization everywhere: the fast path served it.
    expect(answer.seen).toEqual([{ lean: true }]);
    if (build) {
      expect(answer.outcome.code, Buffer.from(answer.wire.body, "hex").toString()).toBe(0);
      const timed = await same(door, method, await build(world, "b"), door.deadline(GENEROUS_MS));
      expect(timed.outcome.code).toBe(0);
    }
    if (answer.outcome.code !== 0) expect(answer.outcome.errorInfoFirst).toBe(true);

    // error: thrown in the pipeline, written by the door, ErrorInfo first.
    const error = await same(door, method, minimal, { "x-test-hook": "fail" });
    expect(error.seen).toEqual([{ lean: true }]);
    expect(error.outcome).toEqual({ code: Code.InvalidArgument, errorInfoFirst: true });

    // deadline: passes while the handler waits on its signal.
    const late = await same(door, method, minimal, { ...door.deadline(1), "x-test-hook": "honor" });
    expect(late.seen).toEqual([{ lean: true, aborted: true, reason: "DeadlineExceeded: [deadline_exceeded] the operation timed out" }]);
    expect(late.outcome).toEqual({ code: Code.DeadlineExceeded, errorInfoFirst: true });
  });
});

it("SUCCESS names registered unary methods only (a renamed method must not lose its success case)", () => {
  for (const name of Object.keys(SUCCESS)) expect(byName.has(name), name).toBe(true);
});
