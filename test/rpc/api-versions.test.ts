/**
 * The generally available v2 services and their v2beta1 twins are one implementation
 * (src/server/api-versions.ts), on every door (gRPC, Connect JSON and proto, gRPC-web, REST):
 *
 * - what one version writes, the other reads the same, byte for byte in JSON (groups,
 *   identities with their oneof relationship, role bindings with their hydrated references,
 *   repos, tags, advisories with their nested oneof events);
 * - a page token continues the same query on the other version, and is refused for another
 *   query there as on its own version;
 * - errors name the version called (PERMISSION_DENIED's and UNIMPLEMENTED's `method`).
 */
import path from "node:path";
import type { DescMethodUnary, JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountAssociationsService as AccountAssociationsV2 } from "../../gen/chainguard/platform/iam/v2/account_associations_pb.js";
import { GroupsService as GroupsV2 } from "../../gen/chainguard/platform/iam/v2/groups_pb.js";
import { IdentitiesService as IdentitiesV2 } from "../../gen/chainguard/platform/iam/v2/identities_pb.js";
import { RoleBindingsService as RoleBindingsV2 } from "../../gen/chainguard/platform/iam/v2/role_bindings_pb.js";
import { GroupsService as GroupsBeta } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService as IdentitiesBeta } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService as RoleBindingsBeta } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { ReposService as ReposV2 } from "../../gen/chainguard/platform/registry/v2/repos_pb.js";
import { TagsService as TagsV2 } from "../../gen/chainguard/platform/registry/v2/tags_pb.js";
import { ReposService as ReposBeta } from "../../gen/chainguard/platform/registry/v2beta1/repos_pb.js";
import { TagsService as TagsBeta } from "../../gen/chainguard/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService as AdvisoriesV2 } from "../../gen/chainguard/platform/vulnerabilities/v2/advisories_pb.js";
import { AdvisoriesService as AdvisoriesBeta } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { importFiles } from "../../src/import/run-import.js";
import { listInputFiles } from "../../src/import/read-records.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { bodyOf, type CallOutcome, callDoors } from "../support/call-method.js";
import { storeOfTestApp } from "../support/store-target.js";
import { closeGrpcClients, Code } from "../support/transports.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");
const VIEWER = builtInRoleUid("viewer");

let t: TestApp;
let advisoryOrg: string;
beforeAll(async () => {
  t = await startTestApp();
  advisoryOrg = String(bodyOf(await callDoors[0]!.call(t.url, undefined, GroupsV2.method.createGroup, { group: { name: "advisories of both" } })).uid);
  const files = listInputFiles([path.join(FIXTURES, "osv")]);
  await importFiles(storeOfTestApp(t.dataDir), files, { group: advisoryOrg });
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

describe.each(callDoors.map((door, i) => ({ door, name: door.name, n: i })))("v2 and v2beta1 over $name", ({ door, n }) => {
  const call = <M extends DescMethodUnary>(method: M, request: Parameters<typeof door.call<M["input"]>>[3], token?: string) =>
    door.call(t.url, token, method as DescMethodUnary, request as never);
  const ok = async <M extends DescMethodUnary>(method: M, request: Parameters<typeof door.call<M["input"]>>[3]): Promise<JsonObject> =>
    bodyOf(await call(method, request));

  it("reads through one version what the other wrote, the same", async () => {
    const org = await ok(GroupsV2.method.createGroup, { group: { name: `both ${n}`, description: "made through v2" } });
    expect(await ok(GroupsBeta.method.getGroup, { uid: String(org.uid) })).toEqual(org);
    const updated = await ok(GroupsBeta.method.updateGroup, {
      group: { uid: String(org.uid), description: "changed through v2beta1" },
      updateMask: { paths: ["description"] },
    });
    expect(await ok(GroupsV2.method.getGroup, { uid: String(org.uid) })).toEqual(updated);
    expect(updated.description).toBe("changed through v2beta1");

    // A oneof of messages in the request (claim_match) and in the answer.
    const identity = await ok(IdentitiesV2.method.createIdentity, {
      parent: String(org.uid),
      identity: {
        name: "ci builder",
        relationship: {
          case: "claimMatch",
          value: { iss: { case: "issuer", value: "https://issuer.example" }, sub: { case: "subject", value: "repo:acme/app" } },
        },
      },
    });
    expect(identity.claimMatch).toMatchObject({ issuer: "https://issuer.example", subject: "repo:acme/app" });
    expect(await ok(IdentitiesBeta.method.getIdentity, { uid: String(identity.uid) })).toEqual(identity);

    // A repeated message in the request; hydrated references in the answer.
    const batch = await ok(RoleBindingsBeta.method.batchCreateRoleBindings, {
      parent: String(org.uid),
      requests: [{ parent: String(org.uid), roleBinding: { identityUid: String(identity.uid), roleUid: VIEWER } }],
    });
    const listed = await ok(RoleBindingsV2.method.listRoleBindings, { uidp: { childrenOf: String(org.uid) } });
    expect(listed.roleBindings).toEqual(batch.roleBindings);
    expect((listed.roleBindings as JsonObject[])[0]).toMatchObject({ identityUid: identity.uid, role: { uid: VIEWER, name: "viewer" } });

    const repo = await ok(ReposV2.method.createRepo, { parent: String(org.uid), repo: { name: "nginx", aliases: ["nginx:latest"] } });
    expect(await ok(ReposBeta.method.getRepo, { uid: String(repo.uid) })).toEqual(repo);
    const tag = await ok(TagsBeta.method.createTag, { parent: String(repo.uid), tag: { name: "1.27", digest: `sha256:${"ab".repeat(32)}` } });
    expect(await ok(TagsV2.method.listTags, { uidp: { childrenOf: String(repo.uid) } })).toEqual(
      await ok(TagsBeta.method.listTags, { uidp: { childrenOf: String(repo.uid) } }),
    );
    expect(await ok(TagsV2.method.getTag, { uid: String(tag.uid) })).toEqual(tag);
  });

  it("answers the advisories' nested oneof events alike on both versions", async () => {
    const beta = await ok(AdvisoriesBeta.method.listAdvisories, { uidp: { childrenOf: advisoryOrg }, orderBy: "advisory_id" });
    const ga = await ok(AdvisoriesV2.method.listAdvisories, { uidp: { childrenOf: advisoryOrg }, orderBy: "advisory_id" });
    expect(ga).toEqual(beta);
    const advisories = ga.advisories as JsonObject[];
    expect(advisories.length).toBeGreaterThan(0);
    const withEvents = advisories.find((a) => (a.events as JsonObject[] | undefined)?.length) as JsonObject;
    expect(await ok(AdvisoriesV2.method.getAdvisory, { uid: String(withEvents.uid) })).toEqual(
      await ok(AdvisoriesBeta.method.getAdvisory, { uid: String(withEvents.uid) }),
    );
  });

  describe("page tokens", () => {
    let org: string;
    let all: string[];
    beforeAll(async () => {
      org = String((await ok(GroupsBeta.method.createGroup, { group: { name: `paged ${n}` } })).uid);
      for (const name of ["one", "two", "three"]) await ok(GroupsV2.method.createGroup, { parent: org, group: { name } });
      all = ((await ok(GroupsBeta.method.listGroups, { uidp: { childrenOf: org }, orderBy: "name" })).groups as JsonObject[]).map((g) => String(g.name));
      expect(all).toEqual(["one", "three", "two"]);
    });
    const page = (method: DescMethodUnary, pageToken: string, extra: JsonObject = {}) =>
      call(method, { uidp: { childrenOf: org }, orderBy: "name", pageSize: 1, pageToken, ...extra });
    const names = (out: CallOutcome) => (bodyOf(out).groups as JsonObject[]).map((g) => String(g.name));

    it.each([
      ["v2beta1 → v2", GroupsBeta.method.listGroups, GroupsV2.method.listGroups],
      ["v2 → v2beta1", GroupsV2.method.listGroups, GroupsBeta.method.listGroups],
    ] as const)("continue the same query on the other version (%s)", async (_, from, to) => {
      const first = bodyOf(await page(from, ""));
      expect((first.groups as JsonObject[]).map((g) => g.name)).toEqual(["one"]);
      const token = String(first.nextPageToken);
      expect(names(await page(to, token))).toEqual(["three"]);
      expect(names(await page(to, token))).toEqual(names(await page(from, token)));
    });

    it.each([
      ["v2beta1 → v2", GroupsBeta.method.listGroups, GroupsV2.method.listGroups],
      ["v2 → v2beta1", GroupsV2.method.listGroups, GroupsBeta.method.listGroups],
    ] as const)("are refused for another query on the other version, as on their own (%s)", async (_, from, to) => {
      const token = String(bodyOf(await page(from, "")).nextPageToken);
      for (const method of [from, to]) {
        for (const other of [{ orderBy: "name desc" }, { name: "two" }] as JsonObject[]) {
          expect(await page(method, token, other)).toMatchObject({ ok: false, code: Code.InvalidArgument, fields: ["page_token"] });
        }
      }
    });
  });

  it("names the version called in its errors", async () => {
    const stranger = await identityToken(t.app, await createUserIdentity(t.dataDir, `stranger-${n}`));
    const someGroup = `${"1".repeat(40)}`;
    for (const [method, twin] of [
      [GroupsV2.method.getGroup, GroupsBeta.method.getGroup],
      [IdentitiesV2.method.getIdentity, IdentitiesBeta.method.getIdentity],
    ] as const) {
      for (const m of [method, twin] as DescMethodUnary[]) {
        const denied = await call(m, { uid: someGroup }, stranger);
        expect(denied).toMatchObject({ ok: false, code: Code.PermissionDenied, metadata: { method: `${m.parent.typeName}/${m.name}` } });
      }
    }
    const check = AccountAssociationsV2.method.checkAccountAssociation;
    expect(await call(check, { uid: someGroup })).toMatchObject({
      ok: false,
      code: Code.Unimplemented,
      metadata: { method: "chainguard.platform.iam.v2.AccountAssociationsService/CheckAccountAssociation" },
    });
  });
});
