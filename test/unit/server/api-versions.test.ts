/**
 * The edge adapter alone (src/server/api-versions.ts): what the v2beta1 implementation receives
 * when a v2 method is called, and what the caller gets back. On the wire a message's type name
 * is never sent, so a type left unconverted would pass every protocol test; these look at the
 * objects themselves.
 */
import { create, type DescMessage, isMessage } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AccountAssociationsService as AccountAssociationsV2 } from "../../../gen/chainguard/platform/iam/v2/account_associations_pb.js";
import {
  type Identity as IdentityV2,
  IdentitiesService as IdentitiesV2,
  IdentitySchema as IdentityV2Schema,
} from "../../../gen/chainguard/platform/iam/v2/identities_pb.js";
import { RoleBindingsService as RoleBindingsV2 } from "../../../gen/chainguard/platform/iam/v2/role_bindings_pb.js";
import { AccountAssociationsService } from "../../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { IdentitiesService, type Identity, Identity_ClaimMatchSchema, IdentitySchema } from "../../../gen/chainguard/platform/iam/v2beta1/identities_pb.js";
import { RolesService } from "../../../gen/chainguard/platform/iam/v2beta1/roles_pb.js";
import { RoleBindingsService, RoleBindingSchema } from "../../../gen/chainguard/platform/iam/v2beta1/role_bindings_pb.js";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { ApiError, unimplemented } from "../../../src/errors/api-error.js";
import { gaTwin } from "../../../src/server/api-versions.js";

type Unary = (request: unknown, context: HandlerContext) => Promise<unknown>;

function doorContext(method: HandlerContext["method"]): HandlerContext {
  return {
    method,
    service: method.parent,
    requestMethod: "POST",
    protocolName: "connect",
    url: "http://x",
    signal: new AbortController().signal,
    timeoutMs: () => 1234,
    requestHeader: new Headers({ authorization: "Bearer t" }),
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: createContextValues(),
  };
}

const typeNames = (value: unknown, out: string[] = []): string[] => {
  if (Array.isArray(value)) for (const v of value) typeNames(v, out);
  else if (value !== null && typeof value === "object") {
    const m = value as Record<string, unknown>;
    if (typeof m.$typeName === "string") out.push(m.$typeName);
    for (const [k, v] of Object.entries(m)) if (k !== "$typeName") typeNames(v, out);
  }
  return out;
};
const versioned = (names: string[]) => names.filter((n) => n.startsWith("chainguard.platform.iam."));

describe("gaTwin", () => {
  it("hands the implementation v2beta1 messages, nested and in oneofs, and its own method; answers in v2 types", async () => {
    let seen: { request: unknown; context: HandlerContext } | undefined;
    const stored: Identity = create(IdentitySchema, {
      uid: "a".repeat(40),
      name: "ci",
      createTime: create(TimestampSchema, { seconds: 1n }),
      relationship: { case: "claimMatch", value: create(Identity_ClaimMatchSchema, { iss: { case: "issuer", value: "https://i" } }) },
    });
    const impl = gaTwin(IdentitiesV2, IdentitiesService, {
      async createIdentity(request, context) {
        seen = { request, context };
        return stored;
      },
    }) as unknown as Record<string, Unary>;
    const request = create(IdentitiesV2.method.createIdentity.input, {
      parent: "b".repeat(40),
      identity: { name: "ci", relationship: { case: "claimMatch", value: { iss: { case: "issuer", value: "https://i" } } } },
    });
    const door = doorContext(IdentitiesV2.method.createIdentity);
    const answer = (await impl.createIdentity?.(request, door)) as IdentityV2;

    expect(versioned(typeNames(seen?.request))).toEqual([
      "chainguard.platform.iam.v2beta1.CreateIdentityRequest",
      "chainguard.platform.iam.v2beta1.Identity",
      "chainguard.platform.iam.v2beta1.Identity.ClaimMatch",
    ]);
    expect(seen?.context.method).toBe(IdentitiesService.method.createIdentity);
    expect(seen?.context.service).toBe(IdentitiesService);
    // Everything else is the door's.
    expect(seen?.context.values).toBe(door.values);
    expect(seen?.context.requestHeader.get("authorization")).toBe("Bearer t");
    expect(seen?.context.timeoutMs()).toBe(1234);
    seen?.context.responseHeader.set("x-set-inside", "1");
    expect(door.responseHeader.get("x-set-inside")).toBe("1");

    expect(isMessage(answer, IdentityV2Schema as DescMessage)).toBe(true);
    expect(versioned(typeNames(answer))).toEqual(["chainguard.platform.iam.v2.Identity", "chainguard.platform.iam.v2.Identity.ClaimMatch"]);
    // Shared types pass through as they are; the stored message itself is untouched.
    expect(answer.createTime).toBe(stored.createTime);
    expect(stored.$typeName).toBe("chainguard.platform.iam.v2beta1.Identity");
    expect(answer).toMatchObject({ uid: stored.uid, name: "ci", relationship: { case: "claimMatch", value: { iss: { case: "issuer", value: "https://i" } } } });
  });

  it("converts repeated messages, and leaves an init answer (no type name) for the door to complete", async () => {
    const impl = gaTwin(RoleBindingsV2, RoleBindingsService, {
      async batchCreateRoleBindings(request) {
        expect(versioned(typeNames(request))).toEqual([
          "chainguard.platform.iam.v2beta1.BatchCreateRoleBindingsRequest",
          "chainguard.platform.iam.v2beta1.CreateRoleBindingRequest",
          "chainguard.platform.iam.v2beta1.RoleBinding",
          "chainguard.platform.iam.v2beta1.CreateRoleBindingRequest",
          "chainguard.platform.iam.v2beta1.RoleBinding",
        ]);
        return { roleBindings: [create(RoleBindingSchema, { uid: "x" })] };
      },
    }) as unknown as Record<string, Unary>;
    const request = create(RoleBindingsV2.method.batchCreateRoleBindings.input, {
      requests: [{ roleBinding: { identityUid: "i" } }, { roleBinding: { identityUid: "j" } }],
    });
    const answer = (await impl.batchCreateRoleBindings?.(request, doorContext(RoleBindingsV2.method.batchCreateRoleBindings))) as Record<string, unknown>;
    expect(answer.$typeName).toBeUndefined();
    expect(versioned(typeNames(answer))).toEqual(["chainguard.platform.iam.v2.RoleBinding"]);
  });

  it("names the v2 method in an error the implementation made naming its own", async () => {
    const impl = gaTwin(AccountAssociationsV2, AccountAssociationsService, {
      async checkAccountAssociation(_req, context) {
        throw unimplemented(`${context.method.parent.typeName}/${context.method.name}`, "a cloud provider");
      },
    }) as unknown as Record<string, Unary>;
    const err = await impl
      .checkAccountAssociation?.(
        create(AccountAssociationsV2.method.checkAccountAssociation.input),
        doorContext(AccountAssociationsV2.method.checkAccountAssociation),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).metadata).toEqual({
      method: "chainguard.platform.iam.v2.AccountAssociationsService/CheckAccountAssociation",
      needs: "a cloud provider",
    });
    expect((err as ApiError).message).toBe(
      "Unimplemented: chainguard.platform.iam.v2.AccountAssociationsService/CheckAccountAssociation needs a cloud provider, which this server does not hold",
    );
  });

  it("leaves out what the twin leaves out (the pipeline answers UNIMPLEMENTED)", () => {
    expect(Object.keys(gaTwin(IdentitiesV2, IdentitiesService, {}))).toEqual([]);
  });

  it("refuses at start-up to serve a service with one that is not its twin", () => {
    expect(() => gaTwin(IdentitiesV2, RolesService, {})).toThrow(/cannot be served as chainguard\.platform\.iam\.v2beta1\.RolesService/);
  });
});
