/**
 * Identities end to end over every RPC protocol (plus one REST PATCH for the inferred mask):
 * each relationship kind, the claim-match, static-keys and AWS rules, output-only fields,
 * update masks that replace the relationship, delete taking the identity's role bindings with
 * it, and list filters. Every hostile case asserts the error details and that the database is
 * unchanged.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService, type IdentitySchema, RelationshipType, ServicePrincipal } from "../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { BadRequestSchema, ErrorInfoSchema, ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

type IdentityInit = MessageInitShape<typeof IdentitySchema>;

const DAY_MS = 24 * 60 * 60 * 1000;
const ISSUER = "https://token.actions.githubusercontent.com";
const SUBJECT = "repo:acme/app:ref:refs/heads/main";
const JWKS = JSON.stringify({
  keys: [{ kty: "EC", crv: "P-256", x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" }],
});
const toMs = (ts: { seconds: bigint; nanos: number } | undefined) => Number(ts?.seconds) * 1000 + (ts?.nanos ?? 0) / 1e6;

const claimMatch = (cm: Record<string, unknown> = {}): IdentityInit["relationship"] => ({
  case: "claimMatch",
  value: { iss: { case: "issuer", value: ISSUER }, sub: { case: "subject", value: SUBJECT }, ...cm },
});
const staticKeys = (sk: Record<string, unknown> = {}): IdentityInit["relationship"] => ({
  case: "staticKeys",
  value: { issuer: "https://issuer.internal", subject: "builder", issuerKeys: JWKS, ...sk },
});

describe.each(rpcTransports)("IdentitiesService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof IdentitiesService>;
  let groupsClient: Client<typeof GroupsService>;
  let bindingsClient: Client<typeof RoleBindingsService>;
  let org: string;
  let folder: string;

  /** Runs a call that must fail without writing; checks code, ErrorInfo and the violated field. */
  async function rejects(fn: () => Promise<unknown>, code: Code, field?: string): Promise<ConnectError> {
    const err = (await expectRejectedAndUnchanged(t, fn)) as ConnectError;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code, err.rawMessage).toBe(code);
    const reason = Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    expect(err.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "iam.chainguard.dev"]]);
    if (field !== undefined)
      expect(
        err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field),
        err.rawMessage,
      ).toContain(field);
    return err;
  }

  const createIdentity = (identity: IdentityInit, parent = org) => client.createIdentity({ parent, identity: { name: "ci builder", ...identity } });

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    client = createClient(IdentitiesService, tr);
    groupsClient = createClient(GroupsService, tr);
    bindingsClient = createClient(RoleBindingsService, tr);
    org = (await groupsClient.createGroup({ group: { name: "identity org" } })).uid;
    folder = (await groupsClient.createGroup({ parent: org, group: { name: "identity folder" } })).uid;
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates a claim-match identity under a group with server-set fields", async () => {
    const id = await createIdentity({
      description: "deploys from main",
      company: "Acme, Inc.",
      relationship: claimMatch({
        aud: { case: "audiencePattern", value: "https://api\\.example\\.(com|dev)" },
        claims: { repository_owner: "acme" },
        claimPatterns: { workflow_ref: "acme/app/\\.github/workflows/[a-z-]+\\.ya?ml@refs/heads/main" },
      }),
    });
    expect(id.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(id).toMatchObject({ name: "ci builder", description: "deploys from main", company: "Acme, Inc.", email: "", emailUnverified: "" });
    expect(id.lastSeenTime).toBeUndefined();
    expect(id.updateTime).toEqual(id.createTime);
    expect(id.relationship.case).toBe("claimMatch");
    expect(id.relationship.value).toMatchObject({
      iss: { case: "issuer", value: ISSUER },
      sub: { case: "subject", value: SUBJECT },
      aud: { case: "audiencePattern", value: "https://api\\.example\\.(com|dev)" },
      claims: { repository_owner: "acme" },
    });
    expect(await client.getIdentity({ uid: id.uid })).toEqual(id);
    expect((await client.listIdentities({ uidp: { ids: [id.uid] } })).identities).toEqual([id]);
  });

  it("creates static-keys (expiring in 365 days by default), AWS and service-principal identities", async () => {
    const before = Date.now();
    const sk = await createIdentity({ relationship: staticKeys({ audiences: ["https://api.example.com"] }) });
    expect(sk.relationship.case).toBe("staticKeys");
    const keys = sk.relationship.value as { expirationTime?: { seconds: bigint; nanos: number }; issuerKeys: string; audiences: string[] };
    expect(toMs(keys.expirationTime)).toBeGreaterThanOrEqual(before + 365 * DAY_MS - 1);
    expect(toMs(keys.expirationTime)).toBeLessThanOrEqual(Date.now() + 365 * DAY_MS);
    expect(keys.issuerKeys).toBe(JWKS);
    expect(keys.audiences).toEqual(["https://api.example.com"]);

    const aws = await createIdentity({
      relationship: {
        case: "awsIdentity",
        value: { awsAccount: "123456789012", awsArn: { case: "arnPattern", value: "arn:aws:iam::123456789012:role/ci-.*" } },
      },
    });
    expect(aws.relationship.value).toMatchObject({ awsAccount: "123456789012", awsArn: { case: "arnPattern" }, awsUserId: { case: undefined } });

    const sp = await createIdentity({ relationship: { case: "servicePrincipal", value: ServicePrincipal.INGESTER } });
    expect(sp.relationship).toEqual({ case: "servicePrincipal", value: ServicePrincipal.INGESTER });

    for (const issuer of ["http://127.0.0.1:8080/realms/dev", "http://localhost:5556", "http://[::1]:9000", "https://idp.example.com/a/b"]) {
      const local = await createIdentity({ relationship: claimMatch({ iss: { case: "issuer", value: issuer } }) });
      expect((local.relationship.value as { iss: { value: string } }).iss.value).toBe(issuer);
    }
  });

  it("ignores the output-only email, email_unverified and last_seen_time on create", async () => {
    const id = await createIdentity({
      email: "root@example.com",
      emailUnverified: "x@example.com",
      lastSeenTime: timestampFromMs(Date.now()),
      relationship: claimMatch(),
    });
    expect(id).toMatchObject({ email: "", emailUnverified: "" });
    expect(id.lastSeenTime).toBeUndefined();
  });

  it("rejects every invalid create with the violated field, writing nothing", async () => {
    const now = Date.now();
    const cases: { identity: IdentityInit; field: string; parent?: string }[] = [
      { identity: {}, field: "relationship" },
      { identity: { relationship: { case: "servicePrincipal", value: ServicePrincipal.UNSPECIFIED } }, field: "relationship" },
      { identity: { name: "", relationship: claimMatch() }, field: "name" },
      { identity: { name: "Bad Name", relationship: claimMatch() }, field: "name" },
      { identity: { relationship: claimMatch() }, field: "parent", parent: "not-a-uid" },
      { identity: { relationship: claimMatch() }, field: "parent", parent: "" },
      { identity: { company: "x".repeat(513), relationship: claimMatch() }, field: "company" },
      { identity: { relationship: claimMatch({ iss: { case: undefined } }) }, field: "claim_match.issuer" },
      { identity: { relationship: claimMatch({ iss: { case: "issuer", value: "" } }) }, field: "claim_match.issuer" },
      { identity: { relationship: claimMatch({ sub: { case: undefined } }) }, field: "claim_match.subject" },
      { identity: { relationship: claimMatch({ iss: { case: "issuer", value: "http://idp.example.com" } }) }, field: "claim_match.issuer" },
      { identity: { relationship: claimMatch({ iss: { case: "issuer", value: "idp.example.com" } }) }, field: "claim_match.issuer" },
      { identity: { relationship: claimMatch({ iss: { case: "issuer", value: "https://u:p@idp.example.com" } }) }, field: "claim_match.issuer" },
      { identity: { relationship: claimMatch({ iss: { case: "issuerPattern", value: "https://(" } }) }, field: "claim_match.issuer_pattern" },
      { identity: { relationship: claimMatch({ sub: { case: "subjectPattern", value: "(a+" } }) }, field: "claim_match.subject_pattern" },
      { identity: { relationship: claimMatch({ sub: { case: "subjectPattern", value: "(?<=x)y" } }) }, field: "claim_match.subject_pattern" },
      { identity: { relationship: claimMatch({ aud: { case: "audiencePattern", value: "[z-a]" } }) }, field: "claim_match.audience_pattern" },
      { identity: { relationship: claimMatch({ claimPatterns: { ref: "refs/heads/(main" } }) }, field: 'claim_match.claim_patterns["ref"]' },
      { identity: { relationship: staticKeys({ issuerKeys: "" }) }, field: "static_keys.issuer_keys" },
      { identity: { relationship: staticKeys({ issuerKeys: '{"keys":[]}' }) }, field: "static_keys.issuer_keys" },
      { identity: { relationship: staticKeys({ issuerKeys: "not json" }) }, field: "static_keys.issuer_keys" },
      { identity: { relationship: staticKeys({ issuerKeys: '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}' }) }, field: "static_keys.issuer_keys" },
      { identity: { relationship: staticKeys({ subject: "" }) }, field: "static_keys.subject" },
      { identity: { relationship: staticKeys({ expirationTime: timestampFromMs(now - 60_000) }) }, field: "static_keys.expiration_time" },
      { identity: { relationship: staticKeys({ expirationTime: timestampFromMs(now + 366 * DAY_MS) }) }, field: "static_keys.expiration_time" },
      { identity: { relationship: staticKeys({ audiences: ["a", "b"] }) }, field: "static_keys.audiences" },
      { identity: { relationship: { case: "awsIdentity", value: { awsAccount: "12345678901" } } }, field: "aws_identity.aws_account" },
      {
        identity: { relationship: { case: "awsIdentity", value: { awsAccount: "123456789012", awsUserId: { case: "userIdPattern", value: "AIDA(" } } } },
        field: "aws_identity.user_id_pattern",
      },
    ];
    for (const c of cases) {
      await rejects(() => client.createIdentity({ parent: c.parent ?? org, identity: { name: "ci builder", ...c.identity } }), Code.InvalidArgument, c.field);
    }
    const err = await rejects(() => client.createIdentity({ parent: org }), Code.InvalidArgument, "identity");
    expect(err.rawMessage).toContain("identity: is required");
    const missing = await rejects(() => createIdentity({ relationship: claimMatch() }, "f".repeat(40)), Code.NotFound);
    expect(missing.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group", resourceName: "f".repeat(40) });
  });

  it("answers NOT_FOUND for a missing identity and INVALID_ARGUMENT for a malformed uid", async () => {
    const uid = `${org}/0123456789abcdef`;
    const err = (await client.getIdentity({ uid }).catch((e) => e)) as ConnectError;
    expect(err.code).toBe(Code.NotFound);
    expect(err.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(uid);
    await rejects(() => client.deleteIdentity({ uid }), Code.NotFound);
    for (const bad of ["", "xyz", `${org}/../etc`]) {
      await rejects(() => client.getIdentity({ uid: bad }), Code.InvalidArgument, "uid");
      await rejects(() => client.deleteIdentity({ uid: bad }), Code.InvalidArgument, "uid");
    }
  });

  it("updates set fields without a mask and only masked fields with one", async () => {
    const id = await createIdentity({ description: "before", relationship: claimMatch() });
    const a = await client.updateIdentity({ identity: { uid: id.uid, description: "after" } });
    expect(a).toMatchObject({ name: "ci builder", description: "after" });
    expect(a.relationship).toEqual(id.relationship);
    expect(a.createTime).toEqual(id.createTime);

    const b = await client.updateIdentity({
      identity: { uid: id.uid, name: "renamed", company: "ignored" },
      updateMask: { paths: ["name"] },
    });
    expect(b).toMatchObject({ name: "renamed", company: "", description: "after" });

    // A relationship path replaces the relationship with the given member.
    const c = await client.updateIdentity({
      identity: { uid: id.uid, relationship: staticKeys() },
      updateMask: { paths: ["claim_match", "static_keys"] },
    });
    expect(c.relationship.case).toBe("staticKeys");
    const d = await client.updateIdentity({
      identity: { uid: id.uid, relationship: claimMatch({ sub: { case: "subjectPattern", value: "repo:acme/.*" } }) },
    });
    expect(d.relationship.value).toMatchObject({ sub: { case: "subjectPattern", value: "repo:acme/.*" } });
    // Nested paths (as REST infers them) count as the whole member.
    const e = await client.updateIdentity({
      identity: { uid: id.uid, relationship: claimMatch() },
      updateMask: { paths: ["claim_match.subject", "claim_match.issuer"] },
    });
    expect(e.relationship.value).toMatchObject({ sub: { case: "subject", value: SUBJECT } });
    expect(await client.getIdentity({ uid: id.uid })).toEqual(e);
  });

  it("rejects updates that are invalid or would leave no relationship, writing nothing", async () => {
    const id = await createIdentity({ relationship: claimMatch() });
    const cases: { req: Parameters<typeof client.updateIdentity>[0]; field: string }[] = [
      { req: { identity: { uid: id.uid }, updateMask: { paths: ["claim_match"] } }, field: "relationship" },
      { req: { identity: { uid: id.uid }, updateMask: { paths: ["*"] } }, field: "name" },
      { req: { identity: { uid: id.uid, relationship: claimMatch({ sub: { case: "subjectPattern", value: "(" } }) } }, field: "claim_match.subject_pattern" },
      { req: { identity: { uid: id.uid, relationship: staticKeys({ issuerKeys: "{}" }) } }, field: "static_keys.issuer_keys" },
      { req: { identity: { uid: id.uid, name: "NO" } }, field: "name" },
      { req: { identity: { uid: id.uid, name: "okay" }, updateMask: { paths: ["email"] } }, field: "update_mask" },
      { req: { identity: { uid: id.uid, name: "okay" }, updateMask: { paths: ["claim_match.nosuch"] } }, field: "update_mask" },
      { req: { identity: { uid: id.uid, name: "okay" }, updateMask: { paths: ["uid"] } }, field: "update_mask" },
      { req: { identity: { uid: "nope", name: "okay" } }, field: "uid" },
    ];
    for (const c of cases) await rejects(() => client.updateIdentity(c.req), Code.InvalidArgument, c.field);
    await rejects(() => client.updateIdentity({}), Code.InvalidArgument, "identity");
    await rejects(() => client.updateIdentity({ identity: { uid: `${org}/0000000000000000`, name: "okay" } }), Code.NotFound);
    // Naming another kind than the current one, with nothing given, leaves the current one.
    const same = await client.updateIdentity({ identity: { uid: id.uid }, updateMask: { paths: ["static_keys"] } });
    expect(same.relationship).toEqual(id.relationship);
  });

  it("deletes an identity together with its role bindings", async () => {
    const viewer = builtInRoleUid("viewer");
    const doomed = await createIdentity({ relationship: claimMatch() });
    const kept = await createIdentity({ relationship: claimMatch() });
    await bindingsClient.createRoleBinding({ parent: org, roleBinding: { identityUid: doomed.uid, roleUid: viewer } });
    await bindingsClient.createRoleBinding({ parent: folder, roleBinding: { identityUid: doomed.uid, roleUid: viewer } });
    const keptBinding = await bindingsClient.createRoleBinding({ parent: org, roleBinding: { identityUid: kept.uid, roleUid: viewer } });
    expect((await bindingsClient.listRoleBindings({ identity: doomed.uid })).roleBindings).toHaveLength(2);

    await client.deleteIdentity({ uid: doomed.uid });
    expect((await client.getIdentity({ uid: doomed.uid }).catch((e) => e)).code).toBe(Code.NotFound);
    expect((await bindingsClient.listRoleBindings({ identity: doomed.uid })).roleBindings).toEqual([]);
    expect(await bindingsClient.getRoleBinding({ uid: keptBinding.uid })).toEqual(keptBinding);
  });
});

describe.each(rpcTransports)("ListIdentities over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof IdentitiesService>;
  let org: string;
  let folder: string;
  let other: string;
  const made: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    const tr = transport.create(t.url);
    client = createClient(IdentitiesService, tr);
    const groupsClient = createClient(GroupsService, tr);
    org = (await groupsClient.createGroup({ group: { name: "list org" } })).uid;
    folder = (await groupsClient.createGroup({ parent: org, group: { name: "list folder" } })).uid;
    other = (await groupsClient.createGroup({ group: { name: "other org" } })).uid;
    const specs: [string, string, IdentityInit["relationship"]][] = [
      ["delta", org, claimMatch()],
      ["alpha", org, staticKeys()],
      ["charlie", folder, claimMatch()],
      ["bravo", folder, { case: "servicePrincipal", value: ServicePrincipal.APKO_BUILDER }],
      ["echo", other, claimMatch()],
    ];
    for (const [name, parent, relationship] of specs) {
      made[name] = (await client.createIdentity({ parent, identity: { name, relationship } })).uid;
    }
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("filters by uidp, exact name and relationship type", async () => {
    const names = async (req: Parameters<typeof client.listIdentities>[0]) => (await client.listIdentities(req)).identities.map((i) => i.name).sort();
    expect(await names({})).toEqual(["alpha", "bravo", "charlie", "delta", "echo"]);
    expect(await names({ uidp: { descendantsOf: org } })).toEqual(["alpha", "bravo", "charlie", "delta"]);
    expect(await names({ uidp: { childrenOf: folder } })).toEqual(["bravo", "charlie"]);
    expect(await names({ name: "charlie" })).toEqual(["charlie"]);
    expect(await names({ name: "charli" })).toEqual([]);
    expect(await names({ relationshipType: RelationshipType.CLAIM_MATCH })).toEqual(["charlie", "delta", "echo"]);
    expect(await names({ relationshipType: RelationshipType.STATIC, uidp: { descendantsOf: org } })).toEqual(["alpha"]);
    expect(await names({ relationshipType: RelationshipType.SERVICE_PRINCIPAL })).toEqual(["bravo"]);
    expect(await names({ relationshipType: RelationshipType.AWS_IDENTITY })).toEqual([]);
    const res = await client.listIdentities({ uidp: { descendantsOf: org } });
    expect(res.totalCount).toBe(4n);
    expect(res.nextPageToken).toBe("");
  });

  it("orders by name and pages with a token, and rejects bad list arguments", async () => {
    const first = await client.listIdentities({ orderBy: "name desc", pageSize: 2 });
    expect(first.identities.map((i) => i.name)).toEqual(["echo", "delta"]);
    const second = await client.listIdentities({ orderBy: "name desc", pageSize: 2, pageToken: first.nextPageToken });
    expect(second.identities.map((i) => i.name)).toEqual(["charlie", "bravo"]);
    const byCreate = await client.listIdentities({ orderBy: "created_at", uidp: { childrenOf: org } });
    expect(byCreate.identities.map((i) => i.uid)).toEqual([made.delta, made.alpha]);
    const err = (await client.listIdentities({ orderBy: "email" }).catch((e) => e)) as ConnectError;
    expect(err.code).toBe(Code.InvalidArgument);
    const badType = (await client.listIdentities({ relationshipType: 99 as RelationshipType }).catch((e) => e)) as ConnectError;
    expect(badType.code).toBe(Code.InvalidArgument);
    expect(badType.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("relationship_type");
  });
});

describe("UpdateIdentity over REST", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("replaces the relationship from a PATCH body whose inferred mask has nested paths", async () => {
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "rest org" })).body.uid as string;
    const created = await rest(t.url, "POST", `/iam/v2beta1/identities/${org}`, {
      name: "rest identity",
      claimMatch: { issuer: ISSUER, subject: SUBJECT },
    });
    expect(created.status).toBe(200);
    const patched = await rest(t.url, "PATCH", `/iam/v2beta1/identities/${created.body.uid}`, {
      claimMatch: { issuer: ISSUER, subjectPattern: "repo:acme/.*" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.claimMatch).toEqual({ issuer: ISSUER, subjectPattern: "repo:acme/.*", claims: {}, claimPatterns: {} });
    expect(patched.body.name).toBe("rest identity");
    const partial = await rest(t.url, "PATCH", `/iam/v2beta1/identities/${created.body.uid}`, { claimMatch: { subject: "x" } });
    expect(partial.status).toBe(400);
    expect(partial.body.details[1].fieldViolations[0].field).toBe("claim_match.issuer");
  });
});
