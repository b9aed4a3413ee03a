/**
 * The built-in (managed) roles every database holds from its first start, and the capability
 * bundles they are made of (docs/published-api.md "Roles").
 *
 * The bundles follow the published SDK's `roles.go`, restricted to the capabilities our
 * `chainguard.capabilities.Capability` enum defines: the library, policy, skills, guardener
 * and actions capabilities of the SDK are not in our enum, so they are simply absent.
 * No internal-only capability (and not CAP_INTERNAL) is in any built-in role.
 *
 * The store never imports generated code, so capabilities are written here by their enum
 * NAME and resolved through `CAPABILITY_NUMBERS`, a mirror of the enum values used below;
 * test/store/roles.test.ts proves every entry equals the generated enum and is not
 * internal-only. Authorization (src/auth/) reuses `BUILT_IN_ROLES` and the bundles.
 */
import { createHash } from "node:crypto";

/** Capability enum name → number, for the capabilities the bundles below use. */
export const CAPABILITY_NUMBERS = {
  CAP_IAM_GROUPS_CREATE: 101,
  CAP_IAM_GROUPS_UPDATE: 102,
  CAP_IAM_GROUPS_LIST: 103,
  CAP_IAM_GROUPS_DELETE: 104,
  CAP_IAM_GROUP_INVITES_CREATE: 201,
  CAP_IAM_GROUP_INVITES_LIST: 203,
  CAP_IAM_GROUP_INVITES_DELETE: 204,
  CAP_IAM_ROLES_CREATE: 301,
  CAP_IAM_ROLES_UPDATE: 302,
  CAP_IAM_ROLES_LIST: 303,
  CAP_IAM_ROLES_DELETE: 304,
  CAP_IAM_ROLE_BINDINGS_CREATE: 401,
  CAP_IAM_ROLE_BINDINGS_UPDATE: 402,
  CAP_IAM_ROLE_BINDINGS_LIST: 403,
  CAP_IAM_ROLE_BINDINGS_DELETE: 404,
  CAP_TENANT_RECORD_SIGNATURES_LIST: 623,
  CAP_TENANT_SBOMS_LIST: 650,
  CAP_TENANT_VULN_REPORTS_LIST: 660,
  CAP_IAM_ACCOUNT_ASSOCIATIONS_CREATE: 701,
  CAP_IAM_ACCOUNT_ASSOCIATIONS_UPDATE: 702,
  CAP_IAM_ACCOUNT_ASSOCIATIONS_LIST: 703,
  CAP_IAM_ACCOUNT_ASSOCIATIONS_DELETE: 704,
  CAP_IAM_IDENTITY_CREATE: 901,
  CAP_IAM_IDENTITY_UPDATE: 902,
  CAP_IAM_IDENTITY_LIST: 903,
  CAP_IAM_IDENTITY_DELETE: 904,
  CAP_IAM_IDENTITY_PROVIDERS_CREATE: 1301,
  CAP_IAM_IDENTITY_PROVIDERS_UPDATE: 1302,
  CAP_IAM_IDENTITY_PROVIDERS_LIST: 1303,
  CAP_IAM_IDENTITY_PROVIDERS_DELETE: 1304,
  CAP_IAM_SCIM_MANAGE: 1305,
  CAP_EVENTS_SUBSCRIPTION_CREATE: 1501,
  CAP_EVENTS_SUBSCRIPTION_UPDATE: 1502,
  CAP_EVENTS_SUBSCRIPTION_LIST: 1503,
  CAP_EVENTS_SUBSCRIPTION_DELETE: 1504,
  CAP_REPO_BLOBS_GET: 1600,
  CAP_REPO_CREATE: 1603,
  CAP_REPO_UPDATE: 1604,
  CAP_REPO_LIST: 1605,
  CAP_REPO_DELETE: 1606,
  CAP_MANIFEST_CREATE: 1607,
  CAP_MANIFEST_UPDATE: 1608,
  CAP_MANIFEST_LIST: 1609,
  CAP_MANIFEST_DELETE: 1610,
  CAP_TAG_CREATE: 1611,
  CAP_TAG_UPDATE: 1612,
  CAP_TAG_LIST: 1613,
  CAP_TAG_DELETE: 1614,
  CAP_MANIFEST_METADATA_LIST: 1615,
  CAP_REFERRERS_LIST: 1616,
  CAP_APK_CREATE: 1650,
  CAP_APK_LIST: 1652,
  CAP_APK_DELETE: 1653,
  CAP_VERSION_LIST: 1654,
  CAP_APK_BLOBS_GET: 1655,
  CAP_VULN_REPORT_CREATE: 1660,
  CAP_VULN_REPORT_LIST: 1661,
  CAP_VULN_CREATE: 1662,
  CAP_BUILD_REPORT_LIST: 1670,
  CAP_REGISTRY_ENTITLEMENTS_LIST: 1680,
  CAP_REGISTRY_SETTINGS_LIST: 1683,
  CAP_REGISTRY_ENTITLEMENTS_IMAGES_ADD: 1685,
  CAP_REGISTRY_ENTITLEMENTS_IMAGES_REMOVE: 1686,
  CAP_REGISTRY_ENTITLEMENTS_IMAGES_SWAP: 1687,
  CAP_REGISTRY_OVERLAYS_LIST: 1688,
  CAP_REGISTRY_OVERLAYS_EDIT: 1689,
  CAP_ADVISORIES_CREATE: 1900,
  CAP_ADVISORIES_UPDATE: 1901,
  CAP_ADVISORIES_LIST: 1902,
  CAP_ADVISORIES_DELETE: 1903,
  CAP_ADVISORIES_APPROVE: 1904,
  CAP_REGISTRY_DEPLOYMENTS_LIST: 1952,
  CAP_TERMS_ACCEPT: 2201,
  CAP_TERMS_LIST: 2202,
  CAP_MCP_TOOL_CALL: 2401,
} as const;

export type CapabilityName = keyof typeof CAPABILITY_NUMBERS;
type Bundle = readonly CapabilityName[];

export const REGISTRY_PULL_CAPS: Bundle = [
  "CAP_IAM_GROUPS_LIST",
  "CAP_TENANT_RECORD_SIGNATURES_LIST",
  "CAP_TENANT_SBOMS_LIST",
  "CAP_TENANT_VULN_REPORTS_LIST",
  "CAP_REPO_BLOBS_GET",
  "CAP_REPO_LIST",
  "CAP_MANIFEST_LIST",
  "CAP_TAG_LIST",
  "CAP_MANIFEST_METADATA_LIST",
  "CAP_REFERRERS_LIST",
];

export const REGISTRY_PUSH_CAPS: Bundle = [
  ...REGISTRY_PULL_CAPS,
  "CAP_IAM_GROUPS_CREATE",
  "CAP_REPO_CREATE",
  "CAP_REPO_UPDATE",
  "CAP_REPO_DELETE",
  "CAP_MANIFEST_CREATE",
  "CAP_MANIFEST_UPDATE",
  "CAP_MANIFEST_DELETE",
  "CAP_TAG_CREATE",
  "CAP_TAG_UPDATE",
  "CAP_TAG_DELETE",
];

/** RegistryEditorCaps (= RegistryRepoAdminCaps). */
export const REGISTRY_EDITOR_CAPS: Bundle = [
  ...REGISTRY_PULL_CAPS,
  "CAP_REPO_CREATE",
  "CAP_REPO_UPDATE",
  "CAP_REPO_DELETE",
  "CAP_REGISTRY_OVERLAYS_LIST",
  "CAP_REGISTRY_OVERLAYS_EDIT",
];

export const APK_PULL_CAPS: Bundle = ["CAP_APK_BLOBS_GET", "CAP_IAM_GROUPS_LIST", "CAP_APK_LIST"];

export const APK_PUSH_CAPS: Bundle = [...APK_PULL_CAPS, "CAP_APK_CREATE", "CAP_APK_DELETE"];

export const PULL_TOKEN_CREATOR_CAPS: Bundle = ["CAP_IAM_ROLE_BINDINGS_CREATE", "CAP_IAM_IDENTITY_CREATE", "CAP_IAM_ROLES_LIST", "CAP_IAM_GROUPS_LIST"];

/** PullTokenCreator + RegistryPull + APKPull (no identity.list). */
export const REGISTRY_PULL_TOKEN_CREATOR_CAPS: Bundle = [...PULL_TOKEN_CREATOR_CAPS, ...REGISTRY_PULL_CAPS, ...APK_PULL_CAPS];

export const ADVISORIES_VIEWER_CAPS: Bundle = ["CAP_ADVISORIES_LIST"];
export const ADVISORIES_CREATOR_CAPS: Bundle = [...ADVISORIES_VIEWER_CAPS, "CAP_ADVISORIES_CREATE", "CAP_ADVISORIES_UPDATE"];
export const ADVISORIES_APPROVER_CAPS: Bundle = [...ADVISORIES_CREATOR_CAPS, "CAP_ADVISORIES_APPROVE"];
export const ADVISORIES_ADMIN_CAPS: Bundle = [...ADVISORIES_APPROVER_CAPS, "CAP_ADVISORIES_DELETE"];

/** Every read (`*.list`) capability of our enum that the SDK's ConsoleViewerCaps holds; no blob reads. */
export const CONSOLE_VIEWER_CAPS: Bundle = [
  "CAP_IAM_GROUPS_LIST",
  "CAP_IAM_GROUP_INVITES_LIST",
  "CAP_IAM_ROLES_LIST",
  "CAP_IAM_ROLE_BINDINGS_LIST",
  "CAP_IAM_IDENTITY_LIST",
  "CAP_IAM_IDENTITY_PROVIDERS_LIST",
  "CAP_IAM_ACCOUNT_ASSOCIATIONS_LIST",
  "CAP_EVENTS_SUBSCRIPTION_LIST",
  "CAP_REPO_LIST",
  "CAP_MANIFEST_LIST",
  "CAP_TAG_LIST",
  "CAP_MANIFEST_METADATA_LIST",
  "CAP_REFERRERS_LIST",
  "CAP_APK_LIST",
  "CAP_VERSION_LIST",
  "CAP_TENANT_RECORD_SIGNATURES_LIST",
  "CAP_TENANT_SBOMS_LIST",
  "CAP_TENANT_VULN_REPORTS_LIST",
  "CAP_VULN_REPORT_LIST",
  "CAP_BUILD_REPORT_LIST",
  "CAP_REGISTRY_ENTITLEMENTS_LIST",
  "CAP_REGISTRY_SETTINGS_LIST",
  "CAP_REGISTRY_OVERLAYS_LIST",
  "CAP_REGISTRY_DEPLOYMENTS_LIST",
  "CAP_ADVISORIES_LIST",
];

/** ConsoleViewer + RegistryPull + APKPull + the GuardenerUser capabilities our enum has (terms.list). */
export const VIEWER_CAPS: Bundle = [...CONSOLE_VIEWER_CAPS, ...REGISTRY_PULL_CAPS, ...APK_PULL_CAPS, "CAP_TERMS_LIST"];

/** Viewer + RegistryEditor + subscription writes. No tag.create, no manifest.create. */
export const EDITOR_CAPS: Bundle = [
  ...VIEWER_CAPS,
  ...REGISTRY_EDITOR_CAPS,
  "CAP_EVENTS_SUBSCRIPTION_CREATE",
  "CAP_EVENTS_SUBSCRIPTION_UPDATE",
  "CAP_EVENTS_SUBSCRIPTION_DELETE",
];

/**
 * Editor + every IAM write + RegistryPush + APKPush + vulnerability writes + entitlement image
 * edits + terms + MCP. Not CAP_INTERNAL, not advisories writes, not registry.entitlements.create/delete.
 */
export const OWNER_CAPS: Bundle = [
  ...EDITOR_CAPS,
  "CAP_IAM_GROUPS_CREATE",
  "CAP_IAM_GROUPS_UPDATE",
  "CAP_IAM_GROUPS_DELETE",
  "CAP_IAM_GROUP_INVITES_CREATE",
  "CAP_IAM_GROUP_INVITES_DELETE",
  "CAP_IAM_ROLES_CREATE",
  "CAP_IAM_ROLES_UPDATE",
  "CAP_IAM_ROLES_DELETE",
  "CAP_IAM_ROLE_BINDINGS_CREATE",
  "CAP_IAM_ROLE_BINDINGS_UPDATE",
  "CAP_IAM_ROLE_BINDINGS_DELETE",
  "CAP_IAM_IDENTITY_CREATE",
  "CAP_IAM_IDENTITY_UPDATE",
  "CAP_IAM_IDENTITY_DELETE",
  "CAP_IAM_IDENTITY_PROVIDERS_CREATE",
  "CAP_IAM_IDENTITY_PROVIDERS_UPDATE",
  "CAP_IAM_IDENTITY_PROVIDERS_DELETE",
  "CAP_IAM_SCIM_MANAGE",
  "CAP_IAM_ACCOUNT_ASSOCIATIONS_CREATE",
  "CAP_IAM_ACCOUNT_ASSOCIATIONS_UPDATE",
  "CAP_IAM_ACCOUNT_ASSOCIATIONS_DELETE",
  ...REGISTRY_PUSH_CAPS,
  ...APK_PUSH_CAPS,
  "CAP_VULN_CREATE",
  "CAP_VULN_REPORT_CREATE",
  "CAP_REGISTRY_ENTITLEMENTS_IMAGES_ADD",
  "CAP_REGISTRY_ENTITLEMENTS_IMAGES_REMOVE",
  "CAP_REGISTRY_ENTITLEMENTS_IMAGES_SWAP",
  "CAP_TERMS_ACCEPT",
  "CAP_TERMS_LIST",
  "CAP_MCP_TOOL_CALL",
];

export interface BuiltInRole {
  /** The published role name, e.g. `viewer`, `registry.pull`. */
  readonly name: string;
  /** `<Title> Role (built-in)`. */
  readonly description: string;
  /** Capability numbers, ascending, without duplicates. */
  readonly capabilities: readonly number[];
}

function role(name: string, title: string, bundle: Bundle): BuiltInRole {
  const numbers = new Set(bundle.map((c) => CAPABILITY_NUMBERS[c]));
  return { name, description: `${title} Role (built-in)`, capabilities: [...numbers].sort((a, b) => a - b) };
}

/** The built-in roles, in a fixed order. */
export const BUILT_IN_ROLES: readonly BuiltInRole[] = [
  role("owner", "Owner", OWNER_CAPS),
  role("editor", "Editor", EDITOR_CAPS),
  role("viewer", "Viewer", VIEWER_CAPS),
  role("console_viewer", "Console Viewer", CONSOLE_VIEWER_CAPS),
  role("registry.pull", "Registry Pull", REGISTRY_PULL_CAPS),
  role("registry.push", "Registry Push", REGISTRY_PUSH_CAPS),
  role("registry.pull_token_creator", "Registry Pull Token Creator", REGISTRY_PULL_TOKEN_CREATOR_CAPS),
  role("apk.pull", "APK Pull", APK_PULL_CAPS),
  role("advisories.viewer", "Advisories Viewer", ADVISORIES_VIEWER_CAPS),
  role("advisories.creator", "Advisories Creator", ADVISORIES_CREATOR_CAPS),
  role("advisories.approver", "Advisories Approver", ADVISORIES_APPROVER_CAPS),
  role("advisories.admin", "Advisories Admin", ADVISORIES_ADMIN_CAPS),
];

/**
 * The deterministic root uid of a built-in role: the first 40 hex characters of
 * sha256("trellis/builtin-role/" + name), so every database (and every replica) agrees on it.
 */
export function builtInRoleUid(name: string): string {
  return createHash("sha256").update(`trellis/builtin-role/${name}`).digest("hex").slice(0, 40);
}
