/**
 * IdentityProviders end to end over every RPC protocol (plus the REST mask rules):
 * create/get/update/delete/list, the write-only client secret, the nested update-mask rules of
 * docs/published-api.md "Update masks" and every hostile case, each asserting the error details and that the database
 * is unchanged.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import {
  IdentityProvider_OIDC_CorrelationRule as Rule,
  type IdentityProvider_OIDCSchema,
  IdentityProvidersService,
} from "../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { newUidp } from "../../src/store/uidp.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectRejectedAndUnchanged, queryDb, snapshotDb, type TestStore } from "../support/db.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

type OidcInit = MessageInitShape<typeof IdentityProvider_OIDCSchema>;

const OIDC: OidcInit = {
  issuer: "https://idp.example.com/realms/acme",
  clientId: "trellis-console",
  clientSecret: "s3cret-value",
  additionalScopes: ["email", "profile"],
  groupsClaim: "groups",
};

/** A role row written straight into the database (the Roles service belongs to another change). */
async function insertRole(app: TestStore, parentUid: string | null): Promise<string> {
  const uid = newUidp(parentUid);
  await queryDb(app, "INSERT INTO roles (uid, parent_uid, name, capabilities, built_in, create_time, update_time) VALUES (?, ?, ?, '[103]', ?, 0, 0)", [
    uid,
    parentUid,
    `role ${uid.slice(-6)}`,
    parentUid === null ? 1 : 0,
  ]);
  return uid;
}

async function storedSecret(app: TestStore, uid: string): Promise<string> {
  const [row] = await queryDb<{ oidc: string }>(app, "SELECT oidc FROM identity_providers WHERE uid = ?", [uid]);
  if (!row) throw new Error(`no identity provider ${uid} in the database`);
  return (JSON.parse(row.oidc) as { clientSecret: string }).clientSecret;
}

describe.each(rpcTransports)("IdentityProvidersService over $name", (transport) => {
  let t: TestApp;
  let client: Client<typeof IdentityProvidersService>;
  let groupsClient: Client<typeof GroupsService>;
  let org: string;
  let folder: string;
  let otherOrg: string;
  let builtIn: string;
  let orgRole: string;
  let folderRole: string;
  let foreignRole: string;

  /** Runs a call that must fail without writing; checks code, ErrorInfo and the violated field. */
  async function rejects(fn: () => Promise<unknown>, code: Code, field?: string): Promise<ConnectError> {
    const err = (await expectRejectedAndUnchanged(t, fn)) as ConnectError;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code, err.rawMessage).toBe(code);
    const reason = Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    expect(err.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "iam.chainguard.dev"]]);
    if (field !== undefined) expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toContain(field);
    return err;
  }

  const createIdp = (parent: string, oidc: OidcInit = OIDC, defaultRole = builtIn, name = "acme sso") =>
    client.createIdentityProvider({
      parent,
      identityProvider: { name, description: "corporate login", defaultRole, configuration: { case: "oidc", value: oidc } },
    });

  beforeAll(async () => {
    t = await startTestApp();
    const transportInstance = transport.create(t.url);
    client = createClient(IdentityProvidersService, transportInstance);
    groupsClient = createClient(GroupsService, transportInstance);
    org = (await groupsClient.createGroup({ group: { name: "idp org" } })).uid;
    folder = (await groupsClient.createGroup({ parent: org, group: { name: "idp folder" } })).uid;
    otherOrg = (await groupsClient.createGroup({ group: { name: "other org" } })).uid;
    builtIn = await insertRole(t, null);
    orgRole = await insertRole(t, org);
    folderRole = await insertRole(t, folder);
    foreignRole = await insertRole(t, otherOrg);
  });
  afterAll(async () => {
    closeGrpcClients();
    await t.close();
  });

  it("creates a provider under a group, storing the secret but never returning it", async () => {
    const idp = await createIdp(org);
    expect(idp.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(idp).toMatchObject({ name: "acme sso", description: "corporate login", defaultRole: builtIn });
    expect(idp.configuration.case).toBe("oidc");
    expect(idp.configuration.value).toMatchObject({
      issuer: OIDC.issuer,
      clientId: "trellis-console",
      clientSecret: "",
      additionalScopes: ["email", "profile"],
      groupsClaim: "groups",
      pkceEnabled: false,
      correlationRule: Rule.SUB_EQUALS_EXTERNAL_ID, // UNSPECIFIED is stored as SUB_EQUALS_EXTERNAL_ID
    });
    // SCIM state is reported, never taken from a request: a new provider has none issued.
    expect(idp.scim).toMatchObject({ enabled: false, etag: "0", endpointUrl: "" });
    expect(idp.updateTime).toEqual(idp.createTime);
    expect(await storedSecret(t, idp.uid)).toBe("s3cret-value");

    const got = await client.getIdentityProvider({ uid: idp.uid });
    expect(got).toEqual(idp);
    const listed = await client.listIdentityProviders({ uidp: { ids: [idp.uid] } });
    // List leaves credential_state unset (published: Get only).
    expect(listed.identityProviders).toEqual([{ ...idp, scim: { ...idp.scim, credentialState: 0 } }]);
  });

  it("accepts PKCE without a secret, loopback http issuers, and roles of the group or an ancestor", async () => {
    const pkce = await createIdp(folder, { issuer: "http://127.0.0.1:5556/dex", clientId: "cli", pkceEnabled: true }, orgRole);
    expect(pkce.configuration.value).toMatchObject({ clientSecret: "", pkceEnabled: true });
    expect(await storedSecret(t, pkce.uid)).toBe("");
    await createIdp(folder, { ...OIDC, issuer: "http://localhost:8080" }, folderRole);
    const oid = await createIdp(org, { ...OIDC, correlationRule: Rule.OID_EQUALS_EXTERNAL_ID });
    expect(oid.configuration.value?.correlationRule).toBe(Rule.OID_EQUALS_EXTERNAL_ID);
  });

  it("rejects missing and malformed fields, writing nothing", async () => {
    await rejects(() => client.createIdentityProvider({ parent: org }), Code.InvalidArgument, "oidc");
    const empty = await rejects(() => client.createIdentityProvider({ parent: org }), Code.InvalidArgument);
    expect(empty.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["name", "default_role", "oidc"]);
    await rejects(() => createIdp("not-a-uidp"), Code.InvalidArgument, "parent");
    await rejects(() => createIdp(""), Code.InvalidArgument, "parent");
    await rejects(() => createIdp(org, OIDC, builtIn, "NO"), Code.InvalidArgument, "name");
    await rejects(() => createIdp(org, OIDC, ""), Code.InvalidArgument, "default_role");
    await rejects(
      () => client.createIdentityProvider({ parent: org, identityProvider: { name: "no config", defaultRole: builtIn } }),
      Code.InvalidArgument,
      "oidc",
    );
    for (const issuer of [
      "",
      "idp.example.com",
      "ftp://idp.example.com",
      "http://idp.example.com",
      "https://",
      "https:idp.example.com",
      "https://user:pw@idp.example.com",
      "https://idp.example.com/?tenant=1",
      "https://idp.example.com/#frag",
      " https://idp.example.com",
    ]) {
      await rejects(() => createIdp(org, { ...OIDC, issuer }), Code.InvalidArgument, "oidc.issuer");
    }
    await rejects(() => createIdp(org, { ...OIDC, clientId: "" }), Code.InvalidArgument, "oidc.client_id");
    await rejects(() => createIdp(org, { ...OIDC, clientSecret: "" }), Code.InvalidArgument, "oidc.client_secret");
    await rejects(() => createIdp(org, { ...OIDC, additionalScopes: ["openid"] }), Code.InvalidArgument, "oidc.additional_scopes[0]");
    await rejects(() => createIdp(org, { ...OIDC, additionalScopes: ["email", ""] }), Code.InvalidArgument, "oidc.additional_scopes[1]");
    await rejects(() => createIdp(org, { ...OIDC, additionalScopes: ["a b"] }), Code.InvalidArgument, "oidc.additional_scopes[0]");
    const many = Array.from({ length: 21 }, (_, i) => `scope${i}`);
    await rejects(() => createIdp(org, { ...OIDC, additionalScopes: many }), Code.InvalidArgument, "oidc.additional_scopes");
  });

  it("rejects a missing group with NOT_FOUND and unusable default roles with INVALID_ARGUMENT", async () => {
    await rejects(() => createIdp("f".repeat(40)), Code.NotFound);
    for (const role of ["e".repeat(40), `${org}/${"0".repeat(16)}`, foreignRole, folderRole]) {
      // dangling, dangling custom, another organization's, a descendant group's
      const err = await rejects(() => createIdp(org, OIDC, role), Code.InvalidArgument, "default_role");
      expect(err.rawMessage).toContain("built-in role or a custom role of the group or one of its ancestors");
    }
  });

  it("updates set fields without a mask, descending into oidc, and keeps the secret", async () => {
    const idp = await createIdp(org, OIDC, builtIn, "upd no mask");
    const a = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, description: "new text", configuration: { case: "oidc", value: { clientId: "other-client" } } },
    });
    expect(a.description).toBe("new text");
    expect(a.name).toBe("upd no mask");
    expect(a.configuration.value).toMatchObject({ issuer: OIDC.issuer, clientId: "other-client", clientSecret: "", groupsClaim: "groups" });
    expect(await storedSecret(t, idp.uid)).toBe("s3cret-value");

    const b = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { clientSecret: "rotated" } } },
    });
    expect(b.configuration.value?.clientSecret).toBe("");
    expect(await storedSecret(t, idp.uid)).toBe("rotated");
    expect(await client.getIdentityProvider({ uid: idp.uid })).toEqual(b);
  });

  it("applies nested and whole-oidc masks: an empty secret keeps the stored one unless named", async () => {
    const idp = await createIdp(org, OIDC, builtIn, "upd masks");
    const a = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, name: "ignored", configuration: { case: "oidc", value: { issuer: "https://new.example.com", clientId: "ignored" } } },
      updateMask: { paths: ["oidc.issuer"] },
    });
    expect(a.name).toBe("upd masks");
    expect(a.configuration.value).toMatchObject({ issuer: "https://new.example.com", clientId: "trellis-console" });

    // The whole configuration, without a secret: the secret stays, unset correlation is a no-op.
    const b = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { issuer: "https://idp2.example.com", clientId: "c2" } } },
      updateMask: { paths: ["oidc"] },
    });
    expect(b.configuration.value).toMatchObject({ issuer: "https://idp2.example.com", clientId: "c2", additionalScopes: [], groupsClaim: "" });
    expect(b.configuration.value?.correlationRule).toBe(Rule.SUB_EQUALS_EXTERNAL_ID);
    expect(await storedSecret(t, idp.uid)).toBe("s3cret-value");

    // Naming oidc.client_secret with an empty value clears it, which needs PKCE.
    await rejects(
      () => client.updateIdentityProvider({ identityProvider: { uid: idp.uid }, updateMask: { paths: ["oidc.client_secret"] } }),
      Code.InvalidArgument,
      "oidc.client_secret",
    );
    expect(await storedSecret(t, idp.uid)).toBe("s3cret-value");
    const c = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { pkceEnabled: true } } },
      updateMask: { paths: ["oidc.client_secret", "oidc.pkce_enabled"] },
    });
    expect(c.configuration.value?.pkceEnabled).toBe(true);
    expect(await storedSecret(t, idp.uid)).toBe("");
    // Turning PKCE off again without a secret is refused.
    await rejects(
      () => client.updateIdentityProvider({ identityProvider: { uid: idp.uid }, updateMask: { paths: ["oidc.pkce_enabled"] } }),
      Code.InvalidArgument,
      "oidc.client_secret",
    );

    // "*" replaces every mutable field with the values given.
    const d = await client.updateIdentityProvider({
      identityProvider: {
        uid: idp.uid,
        name: "star",
        defaultRole: orgRole,
        configuration: { case: "oidc", value: { issuer: "https://star.example.com", clientId: "s", clientSecret: "new" } },
      },
      updateMask: { paths: ["*"] },
    });
    expect(d).toMatchObject({ name: "star", description: "", defaultRole: orgRole });
    expect(d.configuration.value).toMatchObject({ issuer: "https://star.example.com", pkceEnabled: false, clientSecret: "" });
    expect(await storedSecret(t, idp.uid)).toBe("new");
  });

  it("treats correlation_rule as immutable: restating or omitting it is a no-op, changing it fails", async () => {
    const idp = await createIdp(org, OIDC, builtIn, "correlation");
    const same = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { correlationRule: Rule.SUB_EQUALS_EXTERNAL_ID } } },
    });
    expect(same.configuration.value?.correlationRule).toBe(Rule.SUB_EQUALS_EXTERNAL_ID);
    const unset = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: {} } },
      updateMask: { paths: ["oidc.correlation_rule"] },
    });
    expect(unset.configuration.value?.correlationRule).toBe(Rule.SUB_EQUALS_EXTERNAL_ID);
    const err = await rejects(
      () =>
        client.updateIdentityProvider({
          identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { correlationRule: Rule.OID_EQUALS_EXTERNAL_ID } } },
        }),
      Code.InvalidArgument,
      "oidc.correlation_rule",
    );
    expect(err.rawMessage).toContain("immutable");
    await rejects(
      () =>
        client.updateIdentityProvider({
          identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { ...OIDC, correlationRule: Rule.OID_EQUALS_EXTERNAL_ID } } },
          updateMask: { paths: ["oidc"] },
        }),
      Code.InvalidArgument,
      "oidc.correlation_rule",
    );
  });

  it("rejects bad updates, output-only and unknown mask paths, writing nothing; ignores scim in the body", async () => {
    const idp = await createIdp(org, OIDC, builtIn, "upd hostile");
    for (const paths of [["scim"], ["scim.enabled"], ["uid"], ["create_time"], ["nope"], ["oidc.nope"], ["oidc.issuer.host"]]) {
      await rejects(
        () => client.updateIdentityProvider({ identityProvider: { uid: idp.uid, name: "zzz" }, updateMask: { paths } }),
        Code.InvalidArgument,
        "update_mask",
      );
    }
    await rejects(() => client.updateIdentityProvider({ identityProvider: { uid: idp.uid, name: "NO" } }), Code.InvalidArgument, "name");
    await rejects(() => client.updateIdentityProvider({ identityProvider: { uid: idp.uid, defaultRole: foreignRole } }), Code.InvalidArgument, "default_role");
    await rejects(
      () => client.updateIdentityProvider({ identityProvider: { uid: idp.uid }, updateMask: { paths: ["oidc.issuer"] } }),
      Code.InvalidArgument,
      "oidc.issuer",
    );
    await rejects(() => client.updateIdentityProvider({ identityProvider: { uid: idp.uid }, updateMask: { paths: ["oidc"] } }), Code.InvalidArgument, "oidc");
    await rejects(
      () =>
        client.updateIdentityProvider({
          identityProvider: { uid: idp.uid, configuration: { case: "oidc", value: { issuer: "http://evil.example.com" } } },
        }),
      Code.InvalidArgument,
      "oidc.issuer",
    );
    await rejects(() => client.updateIdentityProvider({ identityProvider: { uid: "d".repeat(40), name: "abc" } }), Code.NotFound);
    await rejects(() => client.updateIdentityProvider({}), Code.InvalidArgument, "identity_provider");

    const withScim = await client.updateIdentityProvider({
      identityProvider: { uid: idp.uid, description: "scim ignored", defaultRole: orgRole, scim: { enabled: true, endpointUrl: "x" } },
    });
    expect(withScim).toMatchObject({ description: "scim ignored", defaultRole: orgRole });
    expect(withScim.scim).toMatchObject({ enabled: false, etag: "0", endpointUrl: "" });
  });

  it("deletes, answering NOT_FOUND for missing providers, and blocks deleting a group that has one", async () => {
    const holder = (await groupsClient.createGroup({ parent: org, group: { name: "idp holder" } })).uid;
    const idp = await createIdp(holder);
    const blocked = await rejects(() => groupsClient.deleteGroup({ uid: holder }), Code.FailedPrecondition);
    expect(blocked.findDetails(PreconditionFailureSchema)[0]?.violations[0]).toMatchObject({
      type: "RESOURCE_NOT_EMPTY",
      description: "cannot delete group with child identity providers",
    });
    await client.deleteIdentityProvider({ uid: idp.uid });
    await rejects(() => client.getIdentityProvider({ uid: idp.uid }), Code.NotFound);
    await rejects(() => client.deleteIdentityProvider({ uid: idp.uid }), Code.NotFound);
    await rejects(() => client.getIdentityProvider({ uid: "x" }), Code.InvalidArgument, "uid");
    await groupsClient.deleteGroup({ uid: holder });
  });

  it("lists by uidp and exact name, ordered and paged", async () => {
    const team = (await groupsClient.createGroup({ parent: otherOrg, group: { name: "list team" } })).uid;
    const names = ["delta", "alpha", "charlie", "bravo"];
    for (const name of names) await createIdp(team, OIDC, builtIn, name);
    const byName = await client.listIdentityProviders({ uidp: { childrenOf: team }, orderBy: "name desc" });
    expect(byName.identityProviders.map((i) => i.name)).toEqual(["delta", "charlie", "bravo", "alpha"]);
    expect(byName.totalCount).toBe(4n);
    expect(byName.identityProviders.every((i) => i.configuration.value?.clientSecret === "")).toBe(true);
    expect((await client.listIdentityProviders({ uidp: { descendantsOf: otherOrg }, name: "bravo" })).identityProviders.map((i) => i.name)).toEqual(["bravo"]);
    expect((await client.listIdentityProviders({ uidp: { descendantsOf: otherOrg }, name: "brav" })).identityProviders).toEqual([]);

    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await client.listIdentityProviders({ uidp: { childrenOf: team }, orderBy: "name", pageSize: 3, pageToken });
      seen.push(...page.identityProviders.map((i) => i.name));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(seen).toEqual(["alpha", "bravo", "charlie", "delta"]);
    await rejects(() => client.listIdentityProviders({ orderBy: "secret" }), Code.InvalidArgument, "order_by");
  });

  it("SCIM methods on a provider that does not exist are NOT_FOUND", async () => {
    await rejects(() => client.generateScimToken({ identityProviderUid: `${org}/${"1".repeat(16)}` }), Code.NotFound);
    await rejects(() => client.setScimEnabled({ identityProviderUid: `${org}/${"1".repeat(16)}`, enabled: true, etag: "0" }), Code.NotFound);
  });
});

describe("IdentityProviders over REST: the body's keys are the mask (docs/published-api.md, Update masks)", () => {
  let t: TestApp;
  let idpUid: string;

  beforeAll(async () => {
    t = await startTestApp();
    const org = (await rest(t.url, "POST", "/iam/v2beta1/groups", { name: "rest org" })).body.uid as string;
    const res = await rest(t.url, "POST", `/iam/v2beta1/identityProviders/${org}`, {
      name: "rest idp",
      defaultRole: await insertRole(t, null),
      oidc: { ...OIDC, correlationRule: "CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID" },
    });
    expect(res.status).toBe(200);
    expect(res.body.oidc.clientSecret).toBe("");
    idpUid = res.body.uid;
  });
  afterAll(async () => t.close());

  it("changes only the nested keys sent, keeps the secret, and clears it when clientSecret is sent empty", async () => {
    const patch = (body: unknown, query = "") => rest(t.url, "PATCH", `/iam/v2beta1/identityProviders/${idpUid}${query}`, body);
    const a = await patch({ oidc: { issuer: "https://rest.example.com" } });
    expect(a.status).toBe(200);
    expect(a.body.oidc).toMatchObject({ issuer: "https://rest.example.com", clientId: "trellis-console", clientSecret: "" });
    expect(await storedSecret(t, idpUid)).toBe("s3cret-value");

    const before = await snapshotDb(t);
    const refused = await patch({ oidc: { clientSecret: "" } });
    expect(refused.status).toBe(400);
    expect(refused.body.details[1].fieldViolations[0].field).toBe("oidc.client_secret");
    expect(await snapshotDb(t)).toBe(before);

    const cleared = await patch({ oidc: { clientSecret: "", pkceEnabled: true } });
    expect(cleared.status).toBe(200);
    expect(await storedSecret(t, idpUid)).toBe("");

    // Restating the stored correlation rule is a no-op; an explicit mask ignores other keys.
    const restated = await patch({ name: "ignored", oidc: { correlationRule: "CORRELATION_RULE_OID_EQUALS_EXTERNAL_ID" } }, "?updateMask=oidc.correlationRule");
    expect(restated.status).toBe(200);
    expect(restated.body.name).toBe("rest idp");
    const changed = await patch({ oidc: { correlationRule: "CORRELATION_RULE_SUB_EQUALS_EXTERNAL_ID" } });
    expect(changed.status).toBe(400);
  });
});
