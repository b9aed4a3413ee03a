/**
 * The authentication hook reads a call's credentials once: the token is verified once, and
 * the URL is checked for credentials once — by the hook, unless the door that built the
 * context already refused them before the call began (URL_CHECKED, set by the REST door).
 */
import { createHandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { createAuthenticationHook, URL_CHECKED } from "../../../src/auth/authenticate.js";
import { CALLER } from "../../../src/auth/caller.js";
import { buildPlans } from "../../../src/auth/iam-plan.js";
import type { Caller } from "../../../src/auth/tokens.js";

const JWT = "aaaa.bbbb.cccc";
const method = GroupsService.method.getGroup;

function contextFor(url: string) {
  return createHandlerContext({
    service: GroupsService,
    method,
    protocolName: "rest",
    requestMethod: "GET",
    url,
    requestHeader: { authorization: `Bearer ${JWT}` },
  });
}

function hookCountingVerifications() {
  const seen: string[] = [];
  const hook = createAuthenticationHook(
    {
      async verify(token) {
        seen.push(token);
        return { subject: "operator:test", operator: true } as unknown as Caller;
      },
    },
    buildPlans([GroupsService]),
  );
  return { hook, seen };
}

describe("authentication hook", () => {
  it("verifies the token once per call and puts the caller in the context", async () => {
    const { hook, seen } = hookCountingVerifications();
    const context = contextFor("http://x/iam/v2beta1/groups/abc");
    await hook(method, context);
    expect(seen).toEqual([JWT]);
    expect(context.values.get(CALLER)).toMatchObject({ subject: "operator:test" });
  });

  it("refuses credentials in the URL itself when no door checked them", async () => {
    const { hook, seen } = hookCountingVerifications();
    await expect(hook(method, contextFor("http://x/iam/v2beta1/groups/abc?access_token=x"))).rejects.toMatchObject({
      reason: "TOKEN_IN_URL",
    });
    expect(seen).toEqual([]);
  });

  it("does not read the URL again when the door refused credentials in it already", async () => {
    const { hook, seen } = hookCountingVerifications();
    // The URL here still names a credential, which only a door that skipped its own check
    // could let through: the hook trusts the door's mark and does not look.
    const context = contextFor("http://x/iam/v2beta1/groups/abc?access_token=x");
    context.values.set(URL_CHECKED, true);
    await hook(method, context);
    expect(seen).toEqual([JWT]);
  });
});
