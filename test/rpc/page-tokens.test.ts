/**
 * A page token is good only for the List, the caller and the query that issued it
 * (src/services/list-request.ts `pageBinding`): presented to another List it is
 * INVALID_ARGUMENT on `page_token`, never a cursor or a total_count carried over. An empty
 * ListGroups request and an empty ListRoles request encode to the same bytes, so before the
 * method was bound a ListGroups token on ListRoles answered with ListGroups' totalCount.
 *
 * Every List that takes a page token (found from the descriptors, so a new one is covered
 * without editing this file), on every door (gRPC, gRPC-web, Connect, REST), receives tokens
 * of two other Lists; the tokens are made on one door and work on every door for their own
 * List. Another caller with the very same visible groups cannot use them either.
 */
import type { DescMessage, DescMethodUnary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { RolesService } from "../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { buildPlans } from "../../src/auth/iam-plan.js";
import { builtInRoleUid } from "../../src/store/builtin-roles.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createUserIdentity, identityToken } from "../support/auth.js";
import { bodyOf, type CallToken, callDoors } from "../support/call-method.js";
import { declaredServices } from "../support/declared-services.js";
import { rest } from "../support/rest.js";
import { closeGrpcClients } from "../support/transports.js";

let t: TestApp;
let lists: DescMethodUnary<DescMessage>[] = [];
const tokens = { alice: "", bob: "" };

beforeAll(async () => {
  t = await startTestApp();
  lists = [...buildPlans(await declaredServices())].flatMap(([method, plan]) =>
    plan.kind === "list" && method.methodKind === "unary" && method.input.fields.some((f) => f.name === "page_token")
      ? [method as DescMethodUnary<DescMessage>]
      : [],
  );
  const op = async (path: string, body: unknown) => {
    const r = await rest(t.url, "POST", path, body);
    if (r.status !== 200) throw new Error(`${path}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const org = (await op("/iam/v2beta1/groups", { name: "paged" })).uid;
  for (const name of ["one", "two", "three"]) await op(`/iam/v2beta1/groups/${org}`, { name });
  // Two people with the same binding: the same visible groups, the same rows, two callers.
  for (const name of ["alice", "bob"] as const) {
    const uid = await createUserIdentity(t.dataDir, name);
    await op(`/iam/v2beta1/roleBindings/${org}`, { identityUid: uid, roleUid: builtInRoleUid("viewer") });
    tokens[name] = await identityToken(t.app, uid);
  }
});
afterAll(async () => {
  closeGrpcClients();
  await t?.close();
});

/** One List, whichever version declares it: the same service and method name. */
function sameList(a: DescMethodUnary<DescMessage>, b: DescMethodUnary<DescMessage>): boolean {
  return a.name === b.name && a.parent.name === b.parent.name;
}

/** The first page of one row of `method`, made on the REST door; its token must be set. */
async function firstPage(method: DescMethodUnary<DescMessage>, token: CallToken = undefined) {
  const rest = callDoors[callDoors.length - 1]!;
  const body = bodyOf(await rest.call(t.url, token, method, { pageSize: 1 }));
  expect(body.nextPageToken, `${method.name} gave no page token`).toBeTruthy();
  return { token: String(body.nextPageToken), total: body.totalCount };
}

describe("page tokens are bound to their List", () => {
  it("covers every List with a page token (11 today)", () => {
    expect(lists.length).toBeGreaterThanOrEqual(11);
    expect(lists).toContain(GroupsService.method.listGroups);
    expect(lists).toContain(RolesService.method.listRoles);
  });

  describe.each(callDoors)("over $name", (door) => {
    it("a token of another List is INVALID_ARGUMENT on page_token, on every List", async () => {
      const groups = await firstPage(GroupsService.method.listGroups);
      const roles = await firstPage(RolesService.method.listRoles);
      expect(groups.total).not.toBe(roles.total); // so a count carried over would show
      for (const method of lists) {
        for (const [from, page] of [
          [GroupsService.method.listGroups, groups],
          [RolesService.method.listRoles, roles],
        ] as const) {
          // Its own List, or that List's twin in the other API version (v2 / v2beta1), which
          // continues the same query (test/rpc/api-versions.test.ts).
          if (sameList(from, method)) continue;
          const out = await door.call(t.url, undefined, method, { pageSize: 1, pageToken: page.token });
          expect(
            out.ok ? { ok: true, body: out.body } : { code: out.code, fields: out.fields },
            `${from.name} token on ${method.parent.name}.${method.name}`,
          ).toEqual({
            code: 3,
            fields: ["page_token"],
          });
        }
      }
    });

    it("a token made on REST pages its own List on this door, with the first page's count", async () => {
      for (const method of [GroupsService.method.listGroups, RolesService.method.listRoles] as DescMethodUnary<DescMessage>[]) {
        const page = await firstPage(method);
        const next = bodyOf(await door.call(t.url, undefined, method, { pageSize: 1, pageToken: page.token }));
        expect(next.totalCount, method.name).toBe(page.total);
      }
    });

    it("another caller with the same visible groups cannot use it", async () => {
      const page = await firstPage(GroupsService.method.listGroups, tokens.alice);
      expect(page.total).toBe("4");
      const own = await door.call(t.url, tokens.alice, GroupsService.method.listGroups, { pageSize: 1, pageToken: page.token });
      expect(own.ok).toBe(true);
      const other = await door.call(t.url, tokens.bob, GroupsService.method.listGroups, { pageSize: 1, pageToken: page.token });
      expect(other.ok ? "served" : { code: other.code, fields: other.fields }).toEqual({ code: 3, fields: ["page_token"] });
    });
  });
});
