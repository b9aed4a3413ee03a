/**
 * An engine's Lists run cached statements (SQLite's are keyed by a key read off the built
 * WHERE and ORDER BY, src/store/sqlite/list-query.ts sqlShape). Property, on every engine:
 * for random filters, orders, directions, cursors, skips and page sizes, in a random
 * sequence on one repository (so cached statements of other shapes are around), every List
 * page and count equals what the same query built afresh, with its values inline and
 * unprepared, returns (the engine's `uncached`; SQLite's withFreshStatements). A key that
 * named two different SQL texts alike would hand one filter another's statement and fail
 * here. Every repository with a cached List is here. Seeded: a failure names its seed and path.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACCOUNT_ASSOCIATION_ORDERS } from "../../src/store/account-associations.js";
import { ADVISORY_ORDERS, type AdvisoryFields, type AdvisoryListFilter } from "../../src/store/advisories.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import type { StoreEngine } from "../../src/store/engine.js";
import { GROUP_INVITE_ORDERS } from "../../src/store/group-invites.js";
import { GROUP_ORDERS } from "../../src/store/groups.js";
import { IDENTITY_ORDERS } from "../../src/store/identities.js";
import { IDENTITY_PROVIDER_ORDERS } from "../../src/store/identity-providers.js";
import type { UidpFilter } from "../../src/store/lists.js";
import { REPO_ORDERS } from "../../src/store/repos.js";
import { ROLE_BINDING_ORDERS } from "../../src/store/role-bindings.js";
import { ROLE_ORDERS } from "../../src/store/roles.js";
import { GeneratedTag, TAG_ORDERS } from "../../src/store/tags.js";
import { ENGINES, type OpenedEngine } from "../support/engines.js";

const NOW = 1_800_000_000_000;
const SEED = 20_251_125;
const RUNS = 120;

let opened: OpenedEngine;
let store: StoreEngine;
/** Every group uid, roots first. */
const groupUids: string[] = [];
const repoUids: string[] = [];
const identityUids: string[] = [];
const roleUids: string[] = [];
const providerUids: string[] = [];
const inviteUids: string[] = [];
const inviteKeyIds: string[] = [];
/** The engine's way past its statement caches (EngineUnderTest.uncached). */
let uncached: <T>(call: () => T) => T;

/** Advisory `i`: values cycle so that every filter value matches some rows, not all. */
function advisory(i: number): AdvisoryFields {
  const pick = <T>(values: readonly T[]) => values[i % values.length] as T;
  return {
    advisoryId: `CGA-${i % 5}`,
    legacyAdvisoryId: i % 3 === 0 ? null : `LEG-${i % 3}`,
    author: "importer",
    artifactName: pick(["alpha", "beta", "gamma"]),
    artifactType: pick(["apk", "oci"]),
    artifactArchitecture: pick(["x86_64", "aarch64"]),
    componentName: pick(["openssl", "zlib", "Busybox"]),
    componentLocation: pick(["/usr/lib", "/bin"]),
    componentType: pick(["apk", "go-module"]),
    origin: i % 4 === 0 ? "origin-pkg" : undefined,
    aliases: [`CVE-2026-${i % 3}`],
    severities: [],
    deleteTime: null,
    events: [
      {
        author: pick(["ann", "bob"]),
        reviewer: pick(["rev-1", "rev-2"]),
        reviewState: (i % 3) + 1,
        issue: null,
        eventType: (i % 4) + 1,
        body: "{}",
        findings: null,
      },
    ],
  };
}

const oneOf = <T>(values: readonly T[]) => fc.constantFrom(...values);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/**
 * The hierarchy conditions over uids that exist and one that does not: mostly none or one
 * (so two cases often differ in nothing but which condition, the drift a key must not miss),
 * sometimes any mix.
 */
function uidpArb(uids: () => readonly string[]): fc.Arbitrary<UidpFilter> {
  const uid = fc.constant(null).chain(() => oneOf([...uids(), "f".repeat(40)]));
  const ids = fc.constant(null).chain(() => fc.subarray([...uids()], { minLength: 1, maxLength: 2 }));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant({}) },
    {
      weight: 4,
      arbitrary: fc.oneof(
        uid.map((u) => ({ childrenOf: u })),
        uid.map((u) => ({ descendantsOf: u })),
        uid.map((u) => ({ ancestorsOf: u })),
        fc.constant({ inRoot: true }),
        ids.map((i) => ({ ids: i })),
      ),
    },
    { weight: 1, arbitrary: fc.record({ childrenOf: uid, descendantsOf: uid, ancestorsOf: uid, inRoot: fc.boolean(), ids }, { requiredKeys: [] }) },
  );
}

/** Half the time no other condition, so a case is often one condition alone. */
const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const withinArb = fc.constant(null).chain(() => sometimes(fc.subarray(groupUids, { maxLength: 2 })));

interface Case<F, O extends string> {
  readonly filter: F;
  readonly order: O;
  readonly desc: boolean;
  readonly cursorFrom: number | undefined;
  readonly offset: number;
  readonly limit: number;
}

function caseArb<F, O extends string>(filter: fc.Arbitrary<F>, orders: readonly O[]): fc.Arbitrary<Case<F, O>> {
  return fc.record({
    filter,
    order: oneOf(orders),
    desc: fc.boolean(),
    cursorFrom: maybe(fc.nat({ max: 200 })),
    offset: fc.nat({ max: 3 }),
    limit: fc.integer({ min: 1, max: 6 }),
  });
}

/**
 * Runs the property for one repository: a random sequence of cases, each compared on the
 * cached path and on freshly built statements. The cursor is taken from a row of the whole
 * table (any row is a valid place to continue after).
 */
async function holds<F, O extends string, R extends { uid: string }>(
  arb: fc.Arbitrary<Case<F, O>>,
  repo: {
    list(filter: F, page: { order: O; desc: boolean; after?: { value: string | number; uid: string }; offset: number; limit: number }): Promise<R[]>;
    count(filter: F): Promise<number>;
  },
  everything: F,
  orderValue: (row: R, order: O) => string | number,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(arb, { minLength: 1, maxLength: 8 }), async (cases) => {
      for (const c of cases) {
        const all = await uncached(() => repo.list(everything, { order: c.order, desc: false, offset: 0, limit: 1000 }));
        const from = c.cursorFrom === undefined || all.length === 0 ? undefined : all[c.cursorFrom % all.length];
        const page = {
          order: c.order,
          desc: c.desc,
          ...(from ? { after: { value: orderValue(from, c.order), uid: from.uid } } : {}),
          offset: c.offset,
          limit: c.limit,
        };
        const cached = await repo.list(c.filter, page);
        const fresh = await uncached(() => repo.list(c.filter, page));
        expect(cached).toEqual(fresh);
        expect(await repo.count(c.filter)).toBe(await uncached(() => repo.count(c.filter)));
      }
    }),
    { seed: SEED, numRuns: RUNS },
  );
}

const groupNames = ["alpha", "beta", "dev", "prod", "team", "nope"];

describe.each(ENGINES)("cached List statements answer as uncached ones on $name (fast-check)", (engineUnderTest) => {
  beforeAll(async () => {
    opened = await engineUnderTest.open(NOW);
    uncached = engineUnderTest.uncached;
    for (const uids of [groupUids, repoUids, identityUids, roleUids, providerUids, inviteUids, inviteKeyIds]) uids.length = 0;
    store = opened.engine;
    const r = store.repositories;
    let t = NOW;
    const tick = () => (t += 1000);
    // Names repeat across the tree so name orders have ties that only the uid breaks.
    for (const root of ["alpha", "beta"]) {
      const org = await r.groups.create({ parentUid: null, name: root, description: "", verified: false, kind: 0 }, tick());
      groupUids.push(org.uid);
      for (const folder of ["dev", "prod", "dev"]) {
        const f = await r.groups.create({ parentUid: org.uid, name: folder, description: "", verified: false, kind: 0 }, tick());
        groupUids.push(f.uid);
        const sub = await r.groups.create({ parentUid: f.uid, name: "team", description: "", verified: false, kind: 0 }, tick());
        groupUids.push(sub.uid);
      }
    }
    for (const [i, g] of groupUids.entries()) {
      for (const name of ["nginx", `app-${i % 3}`]) {
        const repo = await r.repos.create(g, { name, description: "", catalogTier: 0, bundles: [], aliases: [], activeTags: [] }, tick());
        repoUids.push(repo.uid);
        for (const tag of ["latest", "1.2", "sha256-abc", "1.2-20250101", "1.2-r3"]) {
          await r.tags.upsert(repo.uid, { name: tag, digest: `sha256:${(i % 4).toString().repeat(64)}`, deprecated: false, bundles: [] }, tick());
        }
      }
      const identity = await r.identities.create(
        {
          parentUid: g,
          name: i % 2 ? "robot" : "ci",
          description: "",
          company: "",
          relationship: { kind: "service_principal", servicePrincipal: 1 + (i % 2) },
        },
        tick(),
      );
      identityUids.push(identity.uid);
      const role = await r.roles.create({ parentUid: g, name: i % 2 ? "reader" : "writer", description: "", capabilities: [103] }, tick());
      roleUids.push(role.uid);
      await r.roleBindings.create(
        g,
        [
          { identityUid: identity.uid, roleUid: role.uid, fields: { identityUid: "identity", roleUid: "role" } },
          { identityUid: identity.uid, roleUid: builtInRoleUid("viewer"), fields: { identityUid: "identity", roleUid: "role" } },
        ],
        tick(),
      );
      await r.accountAssociations.create({ groupUid: g, name: `assoc-${i % 3}`, description: "", providers: { amazon: { account: "123456789012" } } }, tick());
      const provider = await r.identityProviders.create(
        {
          parentUid: g,
          name: `idp-${i % 3}`,
          description: "",
          defaultRole: role.uid,
          oidc: {
            issuer: "https://idp.example",
            clientId: "trellis",
            additionalScopes: [],
            groupsClaim: "",
            pkceEnabled: false,
            correlationRule: 1,
            clientSecret: "",
          },
        },
        tick(),
      );
      providerUids.push(provider.uid);
      // Two invites per group, lifetimes that overlap across groups so expiration orders have ties.
      for (const hours of [1 + (i % 3), 2]) {
        const { invite } = await r.groupInvites.create(
          { parentUid: g, roleUid: role.uid, email: "", singleUse: hours === 2, ttlMs: hours * 3_600_000, creator: "{}" },
          NOW,
        );
        inviteUids.push(invite.uid);
        inviteKeyIds.push(invite.keyId);
      }
    }
    // Advisories arrive the way `trellis import` writes them: through the store's import writer.
    await store.importer.transaction(async (tx) => {
      for (const [g, group] of groupUids.entries()) {
        for (let i = 0; i < 4; i++) await tx.record((w) => w.upsertAdvisory(group, advisory(g * 4 + i), tick()));
      }
    });
  });
  afterAll(async () => {
    await opened.close();
  });

  it("groups", async () => {
    const filter = fc.record({ uidp: uidpArb(() => groupUids), name: sometimes(oneOf(groupNames)), within: withinArb });
    await holds(caseArb(filter, GROUP_ORDERS.keys), store.repositories.groups, { uidp: {} }, GROUP_ORDERS.value);
  });

  it("repos", async () => {
    const filter = fc.record({ uidp: uidpArb(() => repoUids), name: sometimes(oneOf(["nginx", "app-0", "app-1", "nope"])), within: withinArb });
    await holds(caseArb(filter, REPO_ORDERS.keys), store.repositories.repos, { uidp: {} }, REPO_ORDERS.value);
  });

  it("tags", async () => {
    const kinds = [GeneratedTag.Referrer, GeneratedTag.Dated, GeneratedTag.Epoch];
    const filter = fc.record({
      uidp: uidpArb(() => repoUids),
      name: sometimes(oneOf(["latest", "1.2", "sha256-abc", "nope"])),
      digest: sometimes(oneOf([`sha256:${"0".repeat(64)}`, `sha256:${"1".repeat(64)}`])),
      updatedSince: sometimes(fc.integer({ min: NOW, max: NOW + 400_000 })),
      include: fc.subarray(kinds),
      within: withinArb,
    });
    const everything = { uidp: {}, include: kinds };
    await holds(caseArb(filter, TAG_ORDERS.keys), store.repositories.tags, everything, TAG_ORDERS.value);
  });

  it("identities", async () => {
    const filter = fc.record({
      uidp: uidpArb(() => identityUids),
      name: sometimes(oneOf(["robot", "ci", "nope"])),
      kind: sometimes(oneOf(["service_principal", "claim_match", "static_keys"] as const)),
      within: withinArb,
    });
    await holds(caseArb(filter, IDENTITY_ORDERS.keys), store.repositories.identities, { uidp: {} }, IDENTITY_ORDERS.value);
  });

  it("roles", async () => {
    const filter = fc.record({ uidp: uidpArb(() => roleUids), name: sometimes(oneOf(["reader", "writer", "viewer", "nope"])), within: withinArb });
    await holds(caseArb(filter, ROLE_ORDERS.keys), store.repositories.roles, { uidp: {} }, ROLE_ORDERS.value);
  });

  it("role bindings (a joined read)", async () => {
    const filter = fc.record({
      uidp: uidpArb(() => groupUids),
      identityUid: sometimes(fc.constant(null).chain(() => oneOf(identityUids))),
      groupUid: sometimes(fc.constant(null).chain(() => oneOf(groupUids))),
      roleUid: sometimes(fc.constant(null).chain(() => oneOf([...roleUids, builtInRoleUid("viewer")]))),
      within: withinArb,
    });
    await holds(caseArb(filter, ROLE_BINDING_ORDERS.keys), store.repositories.roleBindings, { uidp: {} }, ROLE_BINDING_ORDERS.value);
  });

  it("advisories (sub-selects over events and aliases)", async () => {
    const list = <T>(values: readonly T[]) => sometimes(fc.subarray([...values], { minLength: 1, maxLength: Math.min(2, values.length) }));
    const filter: fc.Arbitrary<AdvisoryListFilter> = fc.record({
      uidp: uidpArb(() => groupUids),
      within: withinArb,
      advisoryIds: list(["CGA-0", "CGA-1", "CGA-9"]),
      legacyAdvisoryIds: list(["LEG-1", "LEG-2"]),
      artifactNames: list(["alpha", "beta"]),
      artifactTypes: list(["apk", "oci"]),
      componentNames: list(["openssl", "busybox"]),
      aliases: list(["CVE-2026-0", "CVE-2026-2"]),
      origin: sometimes(oneOf(["origin-pkg", "alpha"])),
      eventReviewStates: list([1, 2, 3]),
      eventAuthors: list(["ann", "bob"]),
      excludeEventAuthors: list(["ann"]),
      eventTypes: list([1, 2, 3, 4]),
      latestEventType: sometimes(oneOf([1, 3])),
      query: sometimes(oneOf(["ssl", "CVE-2026", "ALPHA"])),
    });
    await holds(caseArb(filter, ADVISORY_ORDERS.keys), store.repositories.advisories, { uidp: {} }, ADVISORY_ORDERS.value);
  });

  it("identity providers", async () => {
    const filter = fc.record({
      uidp: uidpArb(() => [...groupUids, ...providerUids]),
      name: sometimes(oneOf(["idp-0", "idp-1", "nope"])),
      within: withinArb,
    });
    await holds(caseArb(filter, IDENTITY_PROVIDER_ORDERS.keys), store.repositories.identityProviders, { uidp: {} }, IDENTITY_PROVIDER_ORDERS.value);
  });

  it("group invites (a joined read: the role)", async () => {
    const filter = fc.record({
      uidp: uidpArb(() => [...groupUids, ...inviteUids]),
      keyId: sometimes(fc.constant(null).chain(() => oneOf([...inviteKeyIds, "no-such-key"]))),
      within: withinArb,
    });
    await holds(caseArb(filter, GROUP_INVITE_ORDERS.keys), store.repositories.groupInvites, { uidp: {} }, GROUP_INVITE_ORDERS.value);
  });

  it("account associations", async () => {
    const filter = fc.record({ uidp: uidpArb(() => groupUids), name: sometimes(oneOf(["assoc-0", "assoc-1", "nope"])), within: withinArb });
    await holds(caseArb(filter, ACCOUNT_ASSOCIATION_ORDERS.keys), store.repositories.accountAssociations, { uidp: {} }, ACCOUNT_ASSOCIATION_ORDERS.value);
  });
});
