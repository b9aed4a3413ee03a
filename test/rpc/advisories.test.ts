/**
 * AdvisoriesService over every RPC protocol, on data loaded by the importer (the API is
 * read-only): each published filter, ordering, paging, Get with its events in order.
 */
import path from "node:path";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { AdvisoriesService, EventTypeFilter, ReviewState, Severity_Type } from "../../gen/chainguard/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { importFiles } from "../../src/import/run-import.js";
import { listInputFiles } from "../../src/import/read-records.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { storeOfTestApp } from "../support/store-target.js";
import { closeGrpcClients, Code, rpcTransports } from "../support/transports.js";

const FIXTURES = path.join(import.meta.dirname, "../fixtures");

let t: TestApp;
let org: string;

beforeAll(async () => {
  t = await startTestApp();
  const groups = createClient(GroupsService, rpcTransports[1]!.create(t.url));
  org = (await groups.createGroup({ group: { name: "advisory org" } })).uid;
  const files = listInputFiles([path.join(FIXTURES, "osv"), path.join(FIXTURES, "import/registry.ndjson")]);
  const summary = await importFiles(storeOfTestApp(t.dataDir), files, { group: org });
  expect(summary.loaded).toBe(10);
});
afterAll(async () => {
  closeGrpcClients();
  await t.close();
});

function fieldsOf(err: unknown): string[] {
  expect(err).toBeInstanceOf(ConnectError);
  return (err as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field) ?? [];
}

describe.each(rpcTransports)("AdvisoriesService over $name", (transport) => {
  let client: Client<typeof AdvisoriesService>;
  beforeAll(() => {
    client = createClient(AdvisoriesService, transport.create(t.url));
  });

  // Sorted: advisories sharing an advisory_id tie-break on their random uids.
  const names = async (req: Parameters<typeof client.listAdvisories>[0]) => (await client.listAdvisories(req)).advisories.map((a) => a.artifactName).sort();

  it("gets an advisory with its events in order and their oneof content", async () => {
    const [glibc] = (await client.listAdvisories({ advisoryIds: ["CGA-6666-iiii-jjjj"] })).advisories;
    expect(glibc?.uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    const got = await client.getAdvisory({ uid: glibc?.uid ?? "" });
    expect(got).toEqual(glibc);
    expect(got.events.map((e) => e.type.case)).toEqual(["detection", "pendingUpstreamFix", "falsePositiveDetermination"]);
    expect(got.events.every((e) => e.uid.startsWith(`${got.uid}/`))).toBe(true);
    const [detection, pending, fp] = got.events;
    expect(detection?.type.case === "detection" && detection.type.value.type.case).toBe("scanv1");
    expect(pending?.issue).toBe("https://example.test/issues/1");
    expect(pending?.reviewState).toBe(ReviewState.PENDING);
    expect(fp?.type.case === "falsePositiveDetermination" && fp.type.value.note).toBe("not reachable");
    const [openssl] = (await client.listAdvisories({ aliases: ["GHSA-abcd-efgh-ijkl"] })).advisories;
    expect(openssl?.severities).toEqual([expect.objectContaining({ type: Severity_Type.CVSS_V3 })]);
  });

  it("honours every published filter", async () => {
    expect(await names({ uidp: { descendantsOf: org } })).toHaveLength(5);
    expect(await names({ uidp: { childrenOf: org }, advisoryIds: ["CGA-3333-cccc-dddd"] })).toEqual(["curl", "libcurl-openssl4"]);
    expect(await names({ artifactNames: ["curl", "requests"] })).toEqual(["curl", "requests"]);
    expect(await names({ origin: "glibc", artifactNames: ["curl"] })).toEqual(["glibc-locale-en"]); // artifact_names ignored
    expect(await names({ artifactTypes: ["pypi"] })).toEqual(["requests"]);
    expect(await names({ artifactArchitectures: ["aarch64", "x86_64"] })).toEqual(["glibc-locale-en", "openssl"]);
    expect(await names({ componentNames: ["glibc"], componentTypes: ["apk"], componentLocations: ["/usr/lib/libc.so.6"] })).toEqual(["glibc-locale-en"]);
    expect(await names({ aliases: ["CVE-2026-2222"] })).toEqual(["curl", "libcurl-openssl4"]);
    expect(await names({ eventReviewStates: [ReviewState.PENDING] })).toEqual(["glibc-locale-en"]);
    expect(await names({ eventAuthors: ["scanner-bot"] })).toEqual(["glibc-locale-en"]);
    expect(await names({ excludeEventAuthors: ["osv-import"] })).toEqual(["glibc-locale-en"]);
    expect(await names({ eventReviewers: ["bob"] })).toEqual(["glibc-locale-en"]);
    expect(await names({ eventTypes: [EventTypeFilter.FIXED] })).toEqual(["curl", "openssl"]);
    expect(await names({ latestEventType: EventTypeFilter.DETECTION })).toEqual(["libcurl-openssl4", "requests"]);
    expect(await names({ latestEventType: EventTypeFilter.FALSE_POSITIVE_DETERMINATION })).toEqual(["glibc-locale-en"]);
    expect(await names({ query: "CURL" })).toEqual(["curl", "libcurl-openssl4"]);
    expect(await names({ query: "cve-2026-44" })).toEqual(["glibc-locale-en"]);
    expect(await names({ query: "%" })).toEqual([]); // a literal, not a LIKE wildcard
    expect(await names({ uidp: { descendantsOf: "f".repeat(40) } })).toEqual([]);
  });

  it("orders and pages with keyset tokens", async () => {
    const first = await client.listAdvisories({ orderBy: "advisory_id desc", pageSize: 2 });
    expect(first.advisories.map((a) => a.advisoryId)).toEqual(["GHSA-wxyz-1234-5678", "CGA-6666-iiii-jjjj"]);
    expect(first.totalCount).toBe(5n);
    const rest = await client.listAdvisories({ orderBy: "advisory_id desc", pageSize: 10, pageToken: first.nextPageToken });
    expect(rest.advisories.map((a) => a.advisoryId)).toEqual(["CGA-3333-cccc-dddd", "CGA-3333-cccc-dddd", "CGA-2222-aaaa-bbbb"]);
    const byUpdate = await client.listAdvisories({ orderBy: "update_time" });
    expect(byUpdate.advisories[0]?.artifactName).toBe("requests");
  });

  it("rejects bad input with field violations", async () => {
    expect(fieldsOf(await client.getAdvisory({ uid: "CGA-1" }).catch((e) => e))).toEqual(["uid"]);
    expect(fieldsOf(await client.listAdvisories({ orderBy: "severity" }).catch((e) => e))).toEqual(["order_by"]);
    expect(fieldsOf(await client.listAdvisories({ query: "x".repeat(257) }).catch((e) => e))).toEqual(["query"]);
    const many = Array.from({ length: 40_000 }, (_, i) => `CVE-${i}`);
    expect(fieldsOf(await client.listAdvisories({ aliases: many }).catch((e) => e))).toEqual(["aliases"]);
    expect(fieldsOf(await client.listAdvisories({ uidp: { childrenOf: "../" } }).catch((e) => e))).toEqual(["uidp.children_of"]);
    const missing = await client.getAdvisory({ uid: `${org}/0123456789abcdef` }).catch((e) => e);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("a group with advisories", () => {
  it("cannot be deleted: code 9, child advisories", async () => {
    const groups = createClient(GroupsService, rpcTransports[0]!.create(t.url));
    const g = (await groups.createGroup({ group: { name: "only advisories" } })).uid;
    await importFiles(storeOfTestApp(t.dataDir), listInputFiles([path.join(FIXTURES, "osv")]), { group: g });
    const err = await groups.deleteGroup({ uid: g }).catch((e) => e);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toBe("Precondition failed: cannot delete group with child advisories");
  });
});
