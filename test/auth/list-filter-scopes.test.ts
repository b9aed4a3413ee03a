/**
 * A List narrowed by its UIDPFilter to a group (`uidp.descendants_of`, `uidp.children_of`)
 * answers what the caller may see there (the Lists are `unscoped`: results are what the
 * caller can see): the rows under that group that lie at or under the caller's visible
 * groups, with their own total_count. PERMISSION_DENIED only when the caller can see nothing
 * at, above or below the named group, and an unknown uid looks the same as a forbidden one.
 * Every List with a UIDPFilter (found from the descriptors, as authorization finds them, so a
 * new List is covered without editing this file), both fields, on every door; the on-postgres
 * project runs it again on PostgreSQL.
 *
 *   A ─ A1 ─ A2      alice: owner at A       carol: viewer at A1 (rights only below A)
 *     └ A3           dave: no bindings       the operator: everything (the oracle)
 *   B
 *
 * Every group holds a row of every kind the API can make there (identity, role, binding,
 * invite, identity provider, account association, repo with an end-of-life tag) and A1 and
 * A3 imported repos, tags and advisories. The expected answer is computed, not written down: the
 * operator's answer for the same request, keeping the rows at or under the caller's visible
 * groups (what the caller holds the List's capabilities at), or PERMISSION_DENIED when no
 * visible group is at, above or below the named one. A List that Trellis cannot serve (v1
 * ListBuildReports, GetBuildStatus) answers the operator's UNIMPLEMENTED once authorization let
 * the call through, which proves the same about authorization.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type DescField, type DescMessage, type DescMethod, type DescMethodUnary, type JsonObject, ScalarType } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPlans, type MethodPlan } from "../../src/auth/iam-plan.js";
import { listInputFiles } from "../../src/import/read-records.js";
import { importFiles } from "../../src/import/run-import.js";
import { BUILT_IN_ROLES, builtInRoleUid } from "../../src/store/builtin-roles.js";
import { isAncestorOrSelf } from "../../src/store/uidp.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { type CallDoor, type CallOutcome, callDoors } from "../support/call-method.js";
import { declaredServices } from "../support/declared-services.js";
import { rest } from "../support/rest.js";
import { storeOfTestApp } from "../support/store-target.js";
import { closeGrpcClients } from "../support/transports.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");
const VIEWER = new Set(BUILT_IN_ROLES.find((r) => r.name === "viewer")?.capabilities ?? []);

interface NarrowedList {
  readonly method: DescMethodUnary<DescMessage>;
  readonly capabilities: readonly number[];
  readonly filter: DescField;
  readonly fields: readonly DescField[];
}

/** Every List whose request has a UIDPFilter, with its capabilities and the fields that name a group. */
const LISTS: NarrowedList[] = [...buildPlans(await declaredServices())].flatMap(([method, plan]: [DescMethod, MethodPlan]) =>
  plan.kind === "list" && plan.namedScopes.length > 0
    ? [
        {
          method: method as DescMethodUnary<DescMessage>,
          capabilities: plan.capabilities,
          filter: plan.namedScopes[0]![0]!,
          fields: plan.namedScopes.map((p) => p[1]!),
        },
      ]
    : [],
);

let t: TestApp;
const tree = { A: "", A1: "", A2: "", A3: "", B: "" };
const tokens = { alice: "", carol: "", dave: "" };

beforeAll(async () => {
  t = await startTestApp();
  let n = 0;
  const eol: unknown[] = [];
  const op = async (p: string, body: unknown) => {
    const r = await rest(t.url, "POST", p, body);
    if (r.status !== 200) throw new Error(`${p}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  tree.A = (await op("/iam/v2beta1/groups", { name: "tenant-a" })).uid;
  tree.A1 = (await op(`/iam/v2beta1/groups/${tree.A}`, { name: "aa1" })).uid;
  tree.A2 = (await op(`/iam/v2beta1/groups/${tree.A1}`, { name: "aa2" })).uid;
  tree.A3 = (await op(`/iam/v2beta1/groups/${tree.A}`, { name: "aa3" })).uid;
  tree.B = (await op("/iam/v2beta1/groups", { name: "tenant-b" })).uid;
  for (const g of Object.values(tree)) {
    const robot = (await op(`/iam/v2beta1/identities/${g}`, { name: `robot-${n++}`, claimMatch: { issuer: "https://ci.example.test", subject: `job-${n}` } }))
      .uid;
    await op(`/iam/v2beta1/roles/${g}`, { name: `role-${n++}`, capabilities: ["CAP_IAM_GROUPS_LIST"] });
    await op(`/iam/v2beta1/roleBindings/${g}`, { identityUid: robot, roleUid: builtInRoleUid("viewer") });
    await op(`/iam/v2beta1/groupInvites/${g}`, { roleUid: builtInRoleUid("viewer"), ttl: "3600s" });
    await op(`/iam/v2beta1/identityProviders/${g}`, {
      name: `idp-${n++}`,
      defaultRole: builtInRoleUid("viewer"),
      oidc: { issuer: "https://idp.example.com/realms/acme", clientId: "console", clientSecret: "s3cret-value" },
    });
    await op(`/iam/v2beta1/accountAssociations/${g}`, { name: `acct-${n++}`, amazon: { account: "123456789012" } });
    const repoName = `repo-${n++}`;
    const repo = (await op(`/registry/v2beta1/repos/${g}`, { name: repoName })).uid;
    await op(`/registry/v2beta1/tags/${repo}`, { name: "1.0", digest: `sha256:${"ab".repeat(32)}` });
    eol.push({ parent: g, repo_name: repoName, eol_tag: { name: "1.0", mainPackageName: "pkg", tagStatus: "TAG_INACTIVE", graceStatus: "GRACE_ACTIVE" } });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-eol-"));
  try {
    fs.writeFileSync(path.join(dir, "eol.ndjson"), eol.map((r) => JSON.stringify(r)).join("\n"));
    await importFiles(storeOfTestApp(t.dataDir), [path.join(dir, "eol.ndjson")]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const g of [tree.A1, tree.A3]) {
    await importFiles(storeOfTestApp(t.dataDir), listInputFiles([path.join(FIXTURES, "osv"), path.join(FIXTURES, "import/registry.ndjson")]), { group: g });
  }
  for (const [name, at, role] of [
    ["alice", tree.A, "owner"],
    ["carol", tree.A1, "viewer"],
    ["dave", undefined, undefined],
  ] as const) {
    const uid = await createUserIdentity(t.dataDir, name);
    if (at) await op(`/iam/v2beta1/roleBindings/${at}`, { identityUid: uid, roleUid: builtInRoleUid(role) });
    tokens[name] = await identityToken(t.app, uid);
  }
}, 60_000);
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
});

/** What a List answered, reduced to what the rule is about: refused, or which rows and their count. */
type Answer = { readonly code: number; readonly reason?: string } | { readonly rows: string[]; readonly total?: number };

function answerOf(list: NarrowedList, out: CallOutcome): Answer {
  if (!out.ok) return { code: out.code, reason: out.reason };
  const output = list.method.output;
  const items = output.fields.find((f) => f.fieldKind === "list" && f.listKind === "message");
  if (!items) throw new Error(`${list.method.name}: no repeated message field in its response`);
  const rows = ((out.body[items.jsonName] ?? []) as JsonObject[]).map((row) => String(row.uid ?? row.id ?? JSON.stringify(row))).sort();
  const counted = output.fields.some((f) => f.name === "total_count");
  return counted ? { rows, total: Number(out.body.totalCount ?? 0) } : { rows };
}

/** One List narrowed to `named` by `field`, the largest page it serves, on one door. */
async function listOn(door: CallDoor, list: NarrowedList, field: DescField, named: string, token: string | undefined): Promise<Answer> {
  const pageSize = list.method.input.fields.find((f) => f.name === "page_size");
  const request: Record<string, unknown> = { [list.filter.localName]: { [field.localName]: named } };
  if (pageSize?.fieldKind === "scalar") request.pageSize = pageSize.scalar === ScalarType.INT64 ? 200n : 200;
  return answerOf(list, await door.call(t.url, token, list.method, request));
}

const DENIED: Answer = { code: 7, reason: "PERMISSION_DENIED" };

/** What `visible` (the groups whose subtrees the caller may list from) may get, from the operator's answer. */
function expected(oracle: Answer, named: string, visible: readonly string[]): Answer {
  if (!visible.some((v) => isAncestorOrSelf(v, named) || isAncestorOrSelf(named, v))) return DENIED;
  if ("code" in oracle) return oracle;
  const rows = oracle.rows.filter((uid) => visible.some((v) => isAncestorOrSelf(v, uid)));
  return oracle.total === undefined ? { rows } : { rows, total: rows.length };
}

describe("Lists narrowed to a group answer what the caller may see there", () => {
  it("covers every List with a UIDPFilter (16 today), each with descendants_of and children_of", () => {
    expect(LISTS.length).toBeGreaterThanOrEqual(16);
    for (const l of LISTS) expect(l.fields.map((f) => f.name).sort()).toEqual(["children_of", "descendants_of"]);
  });

  it("the issue's case: a viewer at a folder listing its organization's descendants gets its folder's rows and their count", async () => {
    const door = callDoors[callDoors.length - 1]!;
    const groups = LISTS.find((l) => l.method.name === "ListGroups" && l.method.parent.name === "GroupsService")!;
    const descendants = groups.fields.find((f) => f.name === "descendants_of")!;
    expect(await listOn(door, groups, descendants, tree.A, tokens.carol)).toEqual({ rows: [tree.A1, tree.A2].sort(), total: 2 });
    const children = groups.fields.find((f) => f.name === "children_of")!;
    expect(await listOn(door, groups, children, tree.A, tokens.carol)).toEqual({ rows: [tree.A1], total: 1 });
  });

  /** The operator's answers, the oracle: one per (List, field, named group), asked once on REST. */
  const oracles = new Map<string, Promise<Answer>>();
  const oracle = (list: NarrowedList, field: DescField, named: string) => {
    const key = `${list.method.parent.typeName}/${list.method.name} ${field.name} ${named}`;
    let answer = oracles.get(key);
    if (!answer) {
      answer = listOn(callDoors[callDoors.length - 1]!, list, field, named, undefined);
      oracles.set(key, answer);
    }
    return answer;
  };

  describe.each(callDoors)("over $name", (door) => {
    it.each(LISTS.map((l) => ({ ...l, name: `${l.method.parent.name}.${l.method.name}` })))("$name", async (list) => {
      const holds = (caps: ReadonlySet<number>) => list.capabilities.every((c) => caps.has(c));
      const callers = [
        { who: "alice", token: tokens.alice, visible: [tree.A] },
        // A viewer holds some Lists' capabilities only: elsewhere it sees nothing at all.
        { who: "carol", token: tokens.carol, visible: holds(VIEWER) ? [tree.A1] : [] },
        { who: "dave", token: tokens.dave, visible: [] as string[] },
      ];
      const named = [
        tree.A,
        tree.A1,
        tree.A2,
        tree.A3,
        tree.B,
        `${tree.A1}/0123456789abcdef`,
        `${tree.A3}/0123456789abcdef`,
        `${tree.B}/0123456789abcdef`,
        "0".repeat(40),
      ];
      // So that the comparisons mean something: some calls pass authorization, and where the
      // List serves rows, some answers hold rows and some leave out rows the operator sees.
      const seen = { passed: 0, unimplemented: 0, withRows: 0, narrowed: 0 };
      for (const field of list.fields) {
        for (const group of named) {
          const truth = await oracle(list, field, group);
          for (const c of callers) {
            const want = expected(truth, group, c.visible);
            if (want !== DENIED) seen.passed++;
            if ("code" in want && want.code === 12) seen.unimplemented++;
            if ("rows" in want && want.rows.length > 0) seen.withRows++;
            if ("rows" in want && "rows" in truth && want.rows.length < truth.rows.length) seen.narrowed++;
            expect(await listOn(door, list, field, group, c.token), `${list.method.name} ${field.name}=${group} as ${c.who}`).toEqual(want);
          }
        }
      }
      expect(seen.passed).toBeGreaterThan(0);
      if (seen.unimplemented === 0) {
        expect(seen.withRows, "no answer held a row").toBeGreaterThan(0);
        expect(seen.narrowed, "no answer left out a row the operator sees").toBeGreaterThan(0);
      }
    });
  });
});
