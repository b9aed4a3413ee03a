/**
 * One order definition per resource (src/store/orders.ts) yields the `order_by` spellings a
 * List accepts, in the order its error message names them, and each row's cursor value.
 */
import { describe, expect, it } from "vitest";
import { ACCOUNT_ASSOCIATION_ORDERS } from "../../src/store/account-associations.js";
import { ADVISORY_ORDERS } from "../../src/store/advisories.js";
import { GROUP_INVITE_ORDERS } from "../../src/store/group-invites.js";
import { GROUP_ORDERS } from "../../src/store/groups.js";
import { IDENTITY_ORDERS } from "../../src/store/identities.js";
import { IDENTITY_PROVIDER_ORDERS } from "../../src/store/identity-providers.js";
import { REPO_ORDERS } from "../../src/store/repos.js";
import { ROLE_BINDING_ORDERS } from "../../src/store/role-bindings.js";
import { ROLE_ORDERS } from "../../src/store/roles.js";
import { TAG_ORDERS } from "../../src/store/tags.js";

const TIMES = { uid: "uid", name: "name", create_time: "create_time", created_at: "create_time", update_time: "update_time", updated_at: "update_time" };

describe("order definitions", () => {
  it.each([
    ["groups", GROUP_ORDERS.spellings, TIMES],
    ["repos", REPO_ORDERS.spellings, TIMES],
    ["roles", ROLE_ORDERS.spellings, TIMES],
    ["identities", IDENTITY_ORDERS.spellings, TIMES],
    ["identity providers", IDENTITY_PROVIDER_ORDERS.spellings, TIMES],
    ["tags", TAG_ORDERS.spellings, { uid: "uid", name: "name", update_time: "update_time", updated_at: "update_time" }],
    [
      "advisories",
      ADVISORY_ORDERS.spellings,
      { uid: "uid", advisory_id: "advisory_id", create_time: "create_time", created_at: "create_time", update_time: "update_time", updated_at: "update_time" },
    ],
    ["group invites", GROUP_INVITE_ORDERS.spellings, { uid: "uid", create_time: "create_time", created_at: "create_time", expiration_time: "expiration_time" }],
    ["role bindings", ROLE_BINDING_ORDERS.spellings, { uid: "uid", create_time: "create_time", created_at: "create_time" }],
    [
      "account associations",
      ACCOUNT_ASSOCIATION_ORDERS.spellings,
      { group: "uid", uid: "uid", name: "name", create_time: "create_time", created_at: "create_time" },
    ],
  ])("%s accept exactly these order_by fields, in this order", (_name, spellings, expected) => {
    expect(Object.entries(spellings)).toEqual(Object.entries(expected));
  });

  it("the cursor value of a row is the field its order names", () => {
    const row = { uid: "u", parentUid: null, name: "n", description: "", verified: false, kind: 0, createTime: 1, updateTime: 2 };
    expect(GROUP_ORDERS.keys.map((k) => GROUP_ORDERS.value(row, k))).toEqual(["u", "n", 1, 2]);
  });
});
