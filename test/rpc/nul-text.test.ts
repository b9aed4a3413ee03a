/**
 * A NUL character (U+0000) in any string of any write is refused with INVALID_ARGUMENT naming
 * the field, before anything is stored: PostgreSQL text cannot hold it, so both engines refuse
 * it alike (docs/published-api.md "Validation").
 *
 * Property-style over the whole surface: the write methods (every method with a non-GET HTTP
 * binding) and their string fields are read from the generated descriptors, not listed here,
 * so a new method or field is covered without editing this file. Each case sets ONE string
 * field (nested ones included: `group.description`, `role_bindings[0].role`) to seeded random
 * text around a NUL, on top of a request whose path variables are valid, and sends it on every
 * door (gRPC, gRPC-web, Connect JSON and proto, REST), expecting INVALID_ARGUMENT with that
 * field's path in the BadRequest details and the database unchanged.
 */
import { type DescField, type DescMessage, type DescMethodUnary, fromJson, type JsonObject, type JsonValue, ScalarType } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRouteTable } from "../../src/transcode/route-table.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { callDoors } from "../support/call-method.js";
import { snapshotDb } from "../support/db.js";
import { declaredServices } from "../support/declared-services.js";
import { closeGrpcClients, Code } from "../support/transports.js";

const DECLARED = await declaredServices();
const routeTable = createRouteTable(DECLARED);
const WRITES = DECLARED.flatMap((s) => s.methods as DescMethodUnary[]).filter(
  (m) => m.methodKind === "unary" && routeTable.routes.some((r) => r.method === m && r.httpMethod !== "GET"),
);
const fullName = (m: DescMethodUnary) => `${m.parent.typeName}/${m.name}`;

/**
 * One string reachable in a request: its proto path (as BadRequest names it) and its JSON
 * steps. `nulKey` marks a map key case: the NUL text goes in the key, the value is plain.
 */
interface TextField {
  readonly protoPath: string;
  readonly jsonSteps: readonly (string | 0)[];
  readonly nulKey?: { readonly value: JsonValue };
}

/**
 * Every string field of `message`, nested messages and repeated fields included (a repeated
 * field as its first element), each message type once per path so recursive types end.
 * Well-known types are opaque here (their JSON forms are not objects), except StringValue,
 * which is a string in JSON and in the decoded message.
 */
function textFields(message: DescMessage, protoPrefix = "", jsonPrefix: readonly (string | 0)[] = [], visiting = new Set<DescMessage>()): TextField[] {
  if (visiting.has(message)) return [];
  const inner = new Set(visiting).add(message);
  const out: TextField[] = [];
  for (const f of message.fields as DescField[]) {
    const proto = protoPrefix === "" ? f.name : `${protoPrefix}.${f.name}`;
    const json = [...jsonPrefix, f.jsonName];
    if (f.fieldKind === "scalar" && f.scalar === ScalarType.STRING) out.push({ protoPath: proto, jsonSteps: json });
    else if (f.fieldKind === "list" && f.listKind === "scalar" && f.scalar === ScalarType.STRING)
      out.push({ protoPath: `${proto}[0]`, jsonSteps: [...json, 0] });
    else if (f.fieldKind === "list" && f.listKind === "message" && !f.message.typeName.startsWith("google.protobuf.")) {
      out.push(...textFields(f.message, `${proto}[0]`, [...json, 0], inner));
    } else if (f.fieldKind === "map" && f.mapKey === ScalarType.STRING) {
      // A value under a plain key, and a NUL in the key itself (named quoted, as JSON writes it).
      if (f.mapKind === "scalar" && f.scalar === ScalarType.STRING) out.push({ protoPath: `${proto}["k"]`, jsonSteps: [...json, "k"] });
      if (f.mapKind === "message") out.push(...textFields(f.message, `${proto}["k"]`, [...json, "k"], inner));
      const plain: JsonValue = f.mapKind === "scalar" && f.scalar === ScalarType.STRING ? "v" : f.mapKind === "message" ? {} : f.mapKind === "enum" ? 0 : 1;
      out.push({ protoPath: proto, jsonSteps: json, nulKey: { value: plain } });
    } else if (f.fieldKind === "message") {
      if (f.message.typeName === "google.protobuf.StringValue") out.push({ protoPath: proto, jsonSteps: json });
      else if (!f.message.typeName.startsWith("google.protobuf.")) out.push(...textFields(f.message, proto, json, inner));
    }
  }
  return out;
}

/** `json` with the value at `steps` set to `value` (objects and one-element arrays made on the way). */
function setAt(json: JsonObject, steps: readonly (string | 0)[], value: JsonValue): JsonObject {
  const copy = structuredClone(json) as JsonObject;
  let at: Record<string | number, unknown> = copy;
  steps.forEach((step, i) => {
    const last = i === steps.length - 1;
    if (last) at[step] = value;
    else {
      at[step] ??= steps[i + 1] === 0 ? [] : {};
      at = at[step] as Record<string | number, unknown>;
    }
  });
  return copy;
}

/** Valid path variables (a well-formed uid naming nothing, a digest, a package), as in surface.test.ts. */
const NOBODY = `${"0".repeat(40)}/0123456789abcdef`;
const DIGEST = `sha256:${"ab".repeat(32)}`;
function baseJson(method: DescMethodUnary): JsonObject {
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

const CASES = WRITES.flatMap((m) => textFields(m.input).map((field) => ({ m, field, name: `${fullName(m)} ${field.protoPath}` })));
// Seeded text around the NUL: printable on both sides, so the NUL is the only thing wrong. No
// "/": a REST path variable holding one is laid out as two segments, which may route elsewhere.
const TEXT = fc.sample(
  fc
    .tuple(fc.string({ unit: "grapheme-ascii", maxLength: 6 }), fc.string({ unit: "grapheme", maxLength: 6 }))
    .map(([a, b]) => `${a}\u0000${b}`.replaceAll("/", "-")),
  { seed: 21, numRuns: CASES.length },
);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

describe("the cases are read from the descriptors", () => {
  it("covers the writes named in the brief, with their nested fields", () => {
    const names = new Set(CASES.map((c) => c.name));
    expect(WRITES.length).toBeGreaterThan(30);
    for (const expected of [
      "chainguard.platform.iam.v2beta1.GroupsService/CreateGroup group.description",
      "chainguard.platform.iam.v2beta1.GroupsService/UpdateGroup group.name",
      "chainguard.platform.iam.v2beta1.RolesService/CreateRole role.name",
      "chainguard.platform.iam.v2beta1.RoleBindingsService/BatchCreateRoleBindings requests[0].role_binding.role.name",
      "chainguard.platform.iam.v2beta1.IdentityProvidersService/CreateIdentityProvider identity_provider.oidc.additional_scopes[0]",
      "chainguard.platform.registry.v2beta1.ReposService/UpdateRepoReadme repo_readme.content",
      "chainguard.platform.iam.v2beta1.IdentitiesService/CreateIdentity identity.claim_match.issuer",
    ]) {
      expect(names, expected).toContain(expected);
    }
    // Reads are not walked.
    expect(CASES.some((c) => c.m.name === "GetGroup" || c.m.name === "ListGroups")).toBe(false);
  });
});

describe(`a NUL in one string field of one write (${CASES.length} cases × ${callDoors.length} doors)`, () => {
  // One it() per case, titled in full (it.each would cut a long title short).
  for (const [i, { m, field, name }] of CASES.entries()) {
    it(name, async () => {
      const text = TEXT[i] as string;
      const request = fromJson(m.input, setAt(baseJson(m), field.jsonSteps, field.nulKey ? { [text]: field.nulKey.value } : text));
      const expected = field.nulKey ? `${field.protoPath}[${JSON.stringify(text)}]` : field.protoPath;
      const before = await snapshotDb(t);
      for (const door of callDoors) {
        const out = await door.call(t.url, t.token, m, request);
        const where = `${door.name} ${JSON.stringify(text)}: ${JSON.stringify(out)}`;
        expect(out.ok, where).toBe(false);
        if (out.ok) continue;
        expect(out.code, where).toBe(Code.InvalidArgument);
        expect(out.reason, where).toBe("INVALID_ARGUMENT");
        expect(out.fields, where).toContain(expected);
      }
      expect(await snapshotDb(t)).toBe(before);
    });
  }
});
