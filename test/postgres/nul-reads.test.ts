/**
 * A NUL (U+0000) in any string a read carries (a List's name filter, a lookup's issuer, a
 * uid) is answered on PostgreSQL exactly as on SQLite, never INTERNAL: PostgreSQL cannot even
 * take such a text as a parameter (SQLSTATE 22021), where SQLite compares it and finds
 * nothing. One server per engine side by side, the same rows in both, and every read method of
 * the IAM services, with a NUL in each of its string fields in turn and in all at once, on
 * every door.
 */
import type { DescMessage, DescMethodUnary, DescService } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AccountAssociationsService } from "../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/chainguard/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { readHttpRules } from "../../src/transcode/http-rule.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type CallOutcome, callDoors } from "../support/call-method.js";
import { describePostgres, freshPostgresDatabase } from "../support/postgres.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

/** The IAM services (the registry's have their own NUL tests). */
const SERVICES: readonly DescService[] = [
  GroupsService,
  IdentitiesService,
  RolesService,
  RoleBindingsService,
  IdentityProvidersService,
  GroupInvitesService,
  AccountAssociationsService,
];
const PROBE = "nul probe";
const WITH_NUL = `${PROBE}\u0000x`;

/** Every string field's path in a request (nested messages two levels deep), repeated ones marked. */
function stringFields(message: DescMessage, prefix: readonly string[] = [], depth = 0): { path: string[]; repeated: boolean }[] {
  const out: { path: string[]; repeated: boolean }[] = [];
  for (const f of message.fields) {
    if (f.fieldKind === "scalar" && f.scalar === 9) out.push({ path: [...prefix, f.localName], repeated: false });
    else if (f.fieldKind === "list" && f.listKind === "scalar" && f.scalar === 9) out.push({ path: [...prefix, f.localName], repeated: true });
    else if (f.fieldKind === "message" && depth < 2) out.push(...stringFields(f.message, [...prefix, f.localName], depth + 1));
  }
  return out;
}

function withValue(request: Record<string, unknown>, field: { path: string[]; repeated: boolean }): void {
  let at = request;
  for (const key of field.path.slice(0, -1)) {
    at[key] ??= {};
    at = at[key] as Record<string, unknown>;
  }
  at[field.path[field.path.length - 1] as string] = field.repeated ? [WITH_NUL] : WITH_NUL;
}

/** What must match between the engines: the body, or the error's code, reason, fields and message. */
function comparable(outcome: CallOutcome) {
  return outcome.ok ? { body: outcome.body } : { code: outcome.code, reason: outcome.reason, fields: outcome.fields, message: outcome.message };
}

describePostgres("a NUL in a read's strings, on PostgreSQL as on SQLite", () => {
  let sqlite: TestApp;
  let postgres: TestApp;
  beforeAll(async () => {
    sqlite = await startTestApp();
    postgres = await startTestApp({ databaseUrl: await freshPostgresDatabase("nul"), poolSize: 4 });
    // The same rows on both, named like the probe up to its NUL: a text cut at the NUL would find them.
    for (const t of [sqlite, postgres]) {
      const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: PROBE })).body.uid;
      await rest(t.url, "POST", `/iam/v2beta1/roles/${org}`, { name: PROBE, capabilities: ["CAP_IAM_GROUPS_LIST"] });
      await rest(t.url, "POST", `/iam/v2beta1/identities/${org}`, { name: PROBE, claimMatch: { issuer: "https://idp.example.test", subject: PROBE } });
    }
  });
  afterAll(async () => {
    closeGrpcClients();
    await sqlite?.close();
    await postgres?.close();
  });

  const reads = readHttpRules([...SERVICES]).filter((spec) => spec.verb === "GET");

  it("covers every read method of those services", () => {
    expect(reads.map((r) => r.method.name).sort()).toEqual(
      SERVICES.flatMap((s) => s.methods.filter((m) => readHttpRules([s]).some((r) => r.method === m && r.verb === "GET")).map((m) => m.name)).sort(),
    );
    expect(reads.length).toBeGreaterThanOrEqual(8);
  });

  it.each(callDoors.map((d) => [d.name, d] as const))(
    "each read, each string field: the same answer on both engines, never INTERNAL (%s)",
    async (_name, door) => {
      let compared = 0;
      for (const { method } of reads) {
        const fields = stringFields(method.input);
        const requests = fields.map((f) => {
          const request: Record<string, unknown> = {};
          withValue(request, f);
          return { what: f.path.join("."), request };
        });
        const all: Record<string, unknown> = {};
        for (const f of fields) withValue(all, f);
        requests.push({ what: "every string field", request: all });
        for (const { what, request } of requests) {
          const onSqlite = await door.call(sqlite.url, undefined, method as DescMethodUnary, request as never);
          const onPostgres = await door.call(postgres.url, undefined, method as DescMethodUnary, request as never);
          const where = `${method.parent.name}.${method.name} ${what}`;
          expect(onPostgres.ok || onPostgres.code !== 13, `${where}: INTERNAL on PostgreSQL`).toBe(true);
          expect(comparable(onPostgres), where).toEqual(comparable(onSqlite));
          compared++;
        }
      }
      expect(compared).toBeGreaterThan(30);
    },
  );
});
