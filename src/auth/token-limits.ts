/**
 * Down-scoped tokens: the `cap` and `scopes` of a token exchange (docs/auth.md "Down-scoping").
 *
 * A client may ask the exchange for less than its identity holds: only some capabilities
 * (`cap`, friendly names such as "groups.list") and/or only some groups (`scopes`, and the
 * deprecated single `scope`; UIDPs or group names). The token then carries the reduction as
 * two claims, and every authorization decision made for it starts from the identity's
 * bindings narrowed by them (narrowGrants), so the token is worth exactly
 * "capabilities ∩ requested, at groups ∩ requested subtrees" and never more:
 * - `trellis_cap`: the capability friendly names the token may use (sorted, deduplicated);
 * - `trellis_scopes`: the group UIDPs (each standing for its subtree) the token may act in.
 * A claim that is absent means "not reduced in that dimension". A claim that is present but
 * malformed makes the token invalid (fail closed): only this server mints these claims.
 *
 * Bindings are still read on every call, so a reduced token also loses what its identity
 * loses; the reduction is an upper bound, never a grant.
 */
import { getOption, hasOption } from "@bufbuild/protobuf";
import { Capability, CapabilitySchema, name as capabilityNameOption } from "../../gen/chainguard/capabilities/capabilities_pb.js";
import { invalidField } from "../errors/api-error.js";
import type { Grant } from "../store/role-bindings.js";
import { isAncestorOrSelf, isUidp } from "../store/uidp.js";

/** The claim naming the capabilities a reduced token may use. */
export const CAP_CLAIM = "trellis_cap";
/** The claim naming the groups (subtrees) a reduced token may act in. */
export const SCOPES_CLAIM = "trellis_scopes";

/** Most capabilities or scopes one exchange may name (each is a claim entry; keeps tokens small). */
export const MAX_LIMIT_ENTRIES = 100;

/** What a token is reduced to; `undefined` in a dimension means not reduced there. */
export interface TokenLimits {
  /** Capability numbers the token may use. */
  readonly capabilities?: readonly number[];
  /** Group UIDPs (with their subtrees) the token may act in. */
  readonly scopes?: readonly string[];
}

const BY_NAME = new Map<string, number>();
const NAME_OF = new Map<number, string>();
for (const value of CapabilitySchema.values) {
  if (value.number === Capability.UNKNOWN || !hasOption(value, capabilityNameOption)) continue;
  const friendly = getOption(value, capabilityNameOption);
  if (friendly === "") continue;
  BY_NAME.set(friendly, value.number);
  NAME_OF.set(value.number, friendly);
}

/** The capability a friendly name stands for, or undefined. */
export function capabilityByName(friendly: string): number | undefined {
  return BY_NAME.get(friendly);
}

/** The friendly name of a capability (the enum name when it has none). */
export function capabilityName(capability: number): string {
  return NAME_OF.get(capability) ?? Capability[capability] ?? String(capability);
}

/**
 * The values of a repeated request field, with comma lists split (as the SDK and form posts
 * send them) and duplicates removed, order kept. Every entry must name something: a blank one
 * (`cap=%20`, `cap=,,`, `cap=a,`, Connect `cap: [""]`) is not a list of values, and reading
 * it as "nothing asked for" would turn a request to narrow a token into one for an unreduced
 * token, so it is refused.
 * @throws INVALID_ARGUMENT on `field` for a blank entry.
 */
export function listValues(raw: readonly string[], field: string): string[] {
  const values = raw.flatMap((v) => v.split(",")).map((v) => v.trim());
  if (values.includes("")) {
    throw invalidField(field, "holds a blank entry; send each value non-empty (a comma list without empty items), or leave the field out");
  }
  return [...new Set(values)];
}

/**
 * The capabilities an exchange asks for (`cap`), or undefined when the field is absent.
 * @throws INVALID_ARGUMENT on `field` for a blank entry or a name that is no capability.
 */
export function requestedCapabilities(raw: readonly string[], field: string): number[] | undefined {
  if (raw.length === 0) return undefined;
  const names = listValues(raw, field);
  if (names.length > MAX_LIMIT_ENTRIES) throw invalidField(field, `must name at most ${MAX_LIMIT_ENTRIES} capabilities`);
  return names.map((n) => {
    const c = capabilityByName(n);
    if (c === undefined) {
      throw invalidField(field, `${JSON.stringify(n)} is not a capability; use friendly names such as "groups.list"`);
    }
    return c;
  });
}

/** Combines two reductions: each dimension is the intersection of what both allow. */
export function intersectLimits(a: TokenLimits | undefined, b: TokenLimits | undefined): TokenLimits | undefined {
  if (!a) return b;
  if (!b) return a;
  const capabilities =
    a.capabilities && b.capabilities ? a.capabilities.filter((c) => (b.capabilities as readonly number[]).includes(c)) : (a.capabilities ?? b.capabilities);
  let scopes = a.scopes ?? b.scopes;
  if (a.scopes && b.scopes) {
    // The subtrees both allow: for each pair on one chain, the deeper of the two.
    const both = new Set<string>();
    for (const x of a.scopes) {
      for (const y of b.scopes) {
        if (isAncestorOrSelf(x, y)) both.add(y);
        else if (isAncestorOrSelf(y, x)) both.add(x);
      }
    }
    scopes = [...both];
  }
  return { ...(capabilities ? { capabilities } : {}), ...(scopes ? { scopes } : {}) };
}

/** True when the token is reduced in any dimension. */
export function isLimited(limits: TokenLimits | undefined): boolean {
  return limits !== undefined && (limits.capabilities !== undefined || limits.scopes !== undefined);
}

/** The claims that carry a reduction, to mint into a token. */
export function limitClaims(limits: TokenLimits | undefined): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  if (limits?.capabilities) claims[CAP_CLAIM] = [...new Set(limits.capabilities.map(capabilityName))].sort();
  if (limits?.scopes) claims[SCOPES_CLAIM] = [...new Set(limits.scopes)].sort();
  return claims;
}

/**
 * The reduction a verified token carries, or undefined when it carries none.
 * @returns "invalid" when a claim is present but malformed (the token must be refused).
 */
export function limitsFromClaims(payload: Readonly<Record<string, unknown>>): TokenLimits | undefined | "invalid" {
  const capClaim = payload[CAP_CLAIM];
  const scopesClaim = payload[SCOPES_CLAIM];
  if (capClaim === undefined && scopesClaim === undefined) return undefined;
  let capabilities: number[] | undefined;
  if (capClaim !== undefined) {
    if (!Array.isArray(capClaim)) return "invalid";
    capabilities = [];
    for (const n of capClaim) {
      const c = typeof n === "string" ? capabilityByName(n) : undefined;
      if (c === undefined) return "invalid";
      capabilities.push(c);
    }
  }
  let scopes: string[] | undefined;
  if (scopesClaim !== undefined) {
    if (!Array.isArray(scopesClaim) || !scopesClaim.every((s) => typeof s === "string" && isUidp(s))) return "invalid";
    scopes = scopesClaim as string[];
  }
  return { ...(capabilities ? { capabilities } : {}), ...(scopes ? { scopes } : {}) };
}

/**
 * The identity's grants as seen through a reduced token: capabilities outside the reduction
 * dropped, and each binding moved into the requested subtrees. A binding at G counts for a
 * scope S when G is S or above it (it applies at S, so it is carried as a grant at S: the
 * published "role bindings that apply there, including those inherited from ancestor
 * groups"), or when G lies below S (it applies inside S's subtree as it is). Bindings outside
 * every requested subtree are dropped. Holding C at X through the result is then exactly:
 * holding C at X through the identity's bindings, C requested, and X inside a requested scope.
 */
export function narrowGrants(grants: readonly Grant[], limits: TokenLimits | undefined): readonly Grant[] {
  if (!isLimited(limits)) return grants;
  const allowed = limits?.capabilities ? new Set(limits.capabilities) : undefined;
  const out: Grant[] = [];
  for (const g of grants) {
    const capabilities = allowed ? g.capabilities.filter((c) => allowed.has(c)) : g.capabilities;
    if (capabilities.length === 0) continue;
    if (!limits?.scopes) {
      out.push({ groupUid: g.groupUid, capabilities });
      continue;
    }
    for (const scope of limits.scopes) {
      if (isAncestorOrSelf(g.groupUid, scope)) out.push({ groupUid: scope, capabilities });
      else if (isAncestorOrSelf(scope, g.groupUid)) out.push({ groupUid: g.groupUid, capabilities });
    }
  }
  return out;
}
