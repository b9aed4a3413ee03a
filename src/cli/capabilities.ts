/**
 * Capabilities as people name them. capabilities.proto publishes each enum value with a
 * friendly name option (`groups.list`), the form chainctl and the v1 API use; the CLI lists
 * those names and accepts them (and, for scripts written against the enum, the enum names
 * `CAP_IAM_GROUPS_LIST`, `IAM_GROUPS_LIST`, `iam.groups.list`) wherever a capability is taken.
 *
 * The proto gives no prose per value, so the description is said from the name itself
 * ("groups.list" → "list groups"), plus whether a custom role may grant it at all.
 */
import { getOption, hasOption } from "@bufbuild/protobuf";
import { type Capability, CapabilitySchema, internal_only, name as friendlyName } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { usageError } from "./exit-codes.js";

export interface CapabilityInfo {
  /** The published friendly name, e.g. `groups.list`. */
  readonly name: string;
  /** The enum value's name, e.g. `CAP_IAM_GROUPS_LIST` (what role JSON shows). */
  readonly capability: string;
  readonly number: number;
  readonly description: string;
  /** Never granted by a custom role. */
  readonly internalOnly: boolean;
}

const VERBS: Record<string, string> = { create: "create", update: "update", list: "list and read", delete: "delete" };

function describe(name: string, internalOnly: boolean): string {
  const dot = name.lastIndexOf(".");
  const what = dot < 0 ? name : name.slice(0, dot).replace(/_/g, " ");
  const verb = dot < 0 ? "" : name.slice(dot + 1).replace(/_/g, " ");
  const text = dot < 0 ? `${what} access` : `${VERBS[verb] ?? verb} ${what}`;
  return internalOnly ? `${text} (internal: no custom role can grant it)` : text;
}

/** Every capability this build knows, in the proto's order (value 0, UNKNOWN, left out). */
export const CAPABILITIES: readonly CapabilityInfo[] = CapabilitySchema.values
  .filter((v) => v.number !== 0)
  .map((v) => {
    const name = hasOption(v, friendlyName) ? getOption(v, friendlyName) : v.name.toLowerCase();
    const internalOnly = hasOption(v, internal_only) && getOption(v, internal_only);
    return { name, capability: v.name, number: v.number, description: describe(name, internalOnly), internalOnly };
  });

/**
 * A commander option parser: `groups.list` (the published name), `CAP_IAM_GROUPS_LIST`,
 * `IAM_GROUPS_LIST`, `iam_groups_list` or `iam.groups.list` → the enum value, accumulated.
 */
export function parseCapability(value: string, previous: Capability[] | undefined): Capability[] {
  const trimmed = value.trim();
  const byName = CAPABILITIES.find((c) => c.name === trimmed.toLowerCase());
  const wanted = trimmed.toUpperCase().replace(/[.-]/g, "_");
  const found = byName ?? CAPABILITIES.find((c) => c.capability === wanted || c.capability === `CAP_${wanted}`);
  if (!found) {
    throw usageError(`unknown capability ${JSON.stringify(value)} (e.g. groups.list; \`trellis iam capabilities list\` shows them all)`);
  }
  return [...(previous ?? []), found.number as Capability];
}
