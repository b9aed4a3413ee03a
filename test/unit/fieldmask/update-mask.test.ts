/**
 * Update-mask resolution: the top-level resolver the services share, and the nested one for
 * resources whose masks reach into a message (`oidc.issuer`, docs/published-api.md "Update masks").
 */
import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { AccountAssociationSchema } from "../../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import { GroupSchema } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { IdentityProvider_OIDC_CorrelationRule, IdentityProviderSchema } from "../../../gen/chainguard/platform/iam/v2beta1/identity_providers_pb.js";
import { ApiError } from "../../../src/errors/api-error.js";
import { resolveNestedUpdatePaths, resolveUpdatePaths } from "../../../src/fieldmask/update-mask.js";

const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });

const IDP_RULES = {
  mutable: ["name", "description", "default_role", "oidc"],
  nested: {
    oidc: ["issuer", "client_id", "client_secret", "additional_scopes", "groups_claim", "pkce_enabled", "correlation_rule"],
  },
};

function rejection(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error("expected a rejection");
}

describe("resolveUpdatePaths (top level)", () => {
  const group = create(GroupSchema, { uid: "x", name: "n", description: "" });
  const rules = { mutable: ["name", "description", "verified"] };

  it("without a mask returns the set fields in rule order", () => {
    expect(resolveUpdatePaths(GroupSchema, group, undefined, rules)).toEqual(["name"]);
  });

  it("with a mask returns exactly the masked fields, camel or snake, * for all", () => {
    expect(resolveUpdatePaths(GroupSchema, group, mask("description", "name"), rules)).toEqual(["name", "description"]);
    expect(resolveUpdatePaths(GroupSchema, group, mask("*"), rules)).toEqual(rules.mutable);
  });

  it("lets * stand for what this resource may change, while the other fields stay nameable", () => {
    const folder = { mutable: ["name", "description", "kind"], wildcard: ["name", "description"] };
    expect(resolveUpdatePaths(GroupSchema, group, mask("*"), folder)).toEqual(["name", "description"]);
    expect(resolveUpdatePaths(GroupSchema, group, mask("*", "kind"), folder)).toEqual(["name", "description", "kind"]);
    expect(resolveUpdatePaths(GroupSchema, group, mask("kind"), folder)).toEqual(["kind"]);
  });

  it("rejects output-only, unknown, unlisted and nested paths on update_mask", () => {
    for (const [path, text] of [
      ["uid", "output only"],
      ["nope", "unknown field"],
      ["kind", "cannot be updated"],
      ["name.x", "unknown field"],
    ] as const) {
      const err = rejection(() => resolveUpdatePaths(GroupSchema, group, mask(path), rules));
      expect(err.fieldViolations[0]?.field).toBe("update_mask");
      expect(err.fieldViolations[0]?.description).toContain(text);
    }
  });
});

describe("resolveNestedUpdatePaths", () => {
  const idp = create(IdentityProviderSchema, {
    uid: "x",
    description: "d",
    configuration: {
      case: "oidc",
      value: { issuer: "https://i", pkceEnabled: true, correlationRule: IdentityProvider_OIDC_CorrelationRule.UNSPECIFIED },
    },
    scim: { enabled: true },
  });

  it("without a mask descends into nested fields and lists their set sub-fields", () => {
    expect(resolveNestedUpdatePaths(IdentityProviderSchema, idp, undefined, IDP_RULES)).toEqual(["description", "oidc.issuer", "oidc.pkce_enabled"]);
    const bare = create(IdentityProviderSchema, { uid: "x" });
    expect(resolveNestedUpdatePaths(IdentityProviderSchema, bare, undefined, IDP_RULES)).toEqual([]);
  });

  it("accepts top-level and nested paths in either spelling, canonical and ordered", () => {
    expect(
      resolveNestedUpdatePaths(IdentityProviderSchema, idp, mask("oidc.clientSecret", "name", "oidc.issuer", "defaultRole", " oidc.client_secret "), IDP_RULES),
    ).toEqual(["name", "default_role", "oidc.issuer", "oidc.client_secret"]);
  });

  it("lets a whole-field path subsume its sub-paths and * mean every top-level field", () => {
    expect(resolveNestedUpdatePaths(IdentityProviderSchema, idp, mask("oidc.issuer", "oidc"), IDP_RULES)).toEqual(["oidc"]);
    expect(resolveNestedUpdatePaths(IdentityProviderSchema, idp, mask("*"), IDP_RULES)).toEqual(IDP_RULES.mutable);
  });

  it("treats a message field without nested rules as a whole", () => {
    const aa = create(AccountAssociationSchema, { uid: "x", amazon: { account: "1" } });
    expect(resolveNestedUpdatePaths(AccountAssociationSchema, aa, undefined, { mutable: ["amazon"], nested: {} })).toEqual(["amazon"]);
    const err = rejection(() => resolveNestedUpdatePaths(AccountAssociationSchema, aa, mask("amazon.account"), { mutable: ["amazon"], nested: {} }));
    expect(err.fieldViolations[0]?.description).toContain("cannot be updated");
  });

  it("rejects output-only, unknown, unlisted and too-deep paths on update_mask", () => {
    for (const [path, text] of [
      ["scim", "output only"],
      ["scim.enabled", "output only"],
      ["create_time", "output only"],
      ["oidc.nope", "unknown field"],
      ["oidc.", "unknown field"],
      ["nope.issuer", "unknown field"],
      ["name.first", "cannot be updated"],
      ["oidc.issuer.host", "cannot be updated"],
    ] as const) {
      const err = rejection(() => resolveNestedUpdatePaths(IdentityProviderSchema, idp, mask(path), IDP_RULES));
      expect(err.fieldViolations[0]?.field, path).toBe("update_mask");
      expect(err.fieldViolations[0]?.description, path).toContain(text);
    }
    const limited = { mutable: IDP_RULES.mutable, nested: { oidc: ["issuer"] } };
    const err = rejection(() => resolveNestedUpdatePaths(IdentityProviderSchema, idp, mask("oidc.client_id"), limited));
    expect(err.fieldViolations[0]?.description).toContain("cannot be updated");
  });
});
