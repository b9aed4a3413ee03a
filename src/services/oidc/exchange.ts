/**
 * chainguard.platform.oidc.SecurityTokenService/Exchange: an identity-provider token in, an
 * API token (1 hour) out. Served on every door through the call pipeline; its IAM option is
 * `disabled`, so our own authentication hook stands aside and this code checks the presented
 * token itself. REST: `GET /sts/exchange?aud=…&identity=…` or a form-encoded POST.
 *
 * Order of checks (docs/auth.md):
 * 1. `aud`: required; each entry (comma lists split, as the SDK sends them) is our API
 *    audience or the configured registry audience; otherwise INVALID_ARGUMENT.
 *    `identity`, when given, must be a UIDP (INVALID_ARGUMENT).
 * 2. The presented token from the Authorization header (UNAUTHENTICATED when missing, not a
 *    JWT, or one of our own API tokens: those are never exchanged).
 * 3. With `identity` (assume an identity): the identity must exist and have a claim-match or
 *    static-keys relationship whose issuer accepts the token's (unverified) `iss`; then the
 *    signature is verified with keys from that issuer only (exact claim-match issuer, or a
 *    config-trusted issuer when the claim match uses a pattern), and every claim is matched
 *    (matchesClaims; without an audience rule `aud` must name our issuer). A missing identity
 *    and a mismatch get the SAME PERMISSION_DENIED, so identities cannot be probed. A token
 *    that fails verification is UNAUTHENTICATED; an unreachable IdP UNAVAILABLE.
 * 4. Without `identity` (user sign-in): the issuer must be trusted with `users: true`; `aud`
 *    must name its client_id (or our issuer when it has none). The user's identity (a root,
 *    keyed by issuer + subject) is created on first use.
 * 5. Down-scoping (token-limits.ts): `cap` (friendly capability names) and `scopes` plus the
 *    deprecated `scope` (their union; UIDPs, or group names resolved among the groups the
 *    identity is bound at or under) are checked with the other fields, before the presented
 *    token is looked at (an unknown capability, a malformed scope: INVALID_ARGUMENT), and
 *    the names are resolved once the identity is known. The token carries the reduction as
 *    claims; authorization narrows the identity's bindings by them on every call.
 * The identity's lastSeenTime is updated; the token's `sub` is the identity uid and, for an
 * assumed identity, `act` names the original token's iss/sub/aud.
 */
import { randomUUID } from "node:crypto";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { decodeJwt, type JWTPayload } from "jose";
import type { SecurityTokenService } from "../../../gen/chainguard/platform/oidc/oidc_pb.js";
import { invalidField, permissionDenied } from "../../errors/api-error.js";
import type { NewRefreshToken, RefreshTokensRepository } from "../../store/refresh-tokens.js";
import type { Grant } from "../../store/role-bindings.js";
import { matchesClaims, matchesString } from "../../auth/claim-match.js";
import { type IdentitiesRepository, type IdentityRecord, userIdentityUid } from "../../store/identities.js";
import { isAncestorOrSelf, isUidp } from "../../store/uidp.js";
import { bearerToken } from "../../auth/authenticate.js";
import type { IdpVerifier } from "../../auth/idp-keys.js";
import type { TokenIssuer } from "../../auth/tokens.js";
import { tokenRejected } from "../../auth/tokens.js";
import { checkNoNul } from "../validate.js";
import {
  newRefreshToken,
  presentedRefreshToken,
  REFRESH_FAMILY_TTL_S,
  REFRESH_REQUEST_HEADER,
  REFRESH_TOKEN_TTL_S,
  refreshTokenHash,
} from "../../auth/refresh-tokens.js";
import { intersectLimits, limitClaims, listValues, MAX_LIMIT_ENTRIES, requestedCapabilities, type TokenLimits } from "../../auth/token-limits.js";
import type { TrustConfig } from "../../auth/trust-config.js";

/** Lifetime of exchanged tokens (docs/published-api.md "Credentials"). */
export const EXCHANGED_TOKEN_TTL_S = 60 * 60;

export interface ExchangeDeps {
  readonly issuer: () => TokenIssuer;
  readonly idp: IdpVerifier;
  readonly trust: TrustConfig;
  readonly identities: IdentitiesRepository;
  /** The identity's bindings (to resolve scope names among its groups). */
  readonly grantsOf: (identityUid: string) => Promise<Grant[]>;
  /** Uids of the groups named exactly `name` at or under any of `within` (at most `max + 1`). */
  readonly groupsNamed: (name: string, within: readonly string[], max: number) => Promise<string[]>;
  readonly refreshTokens: RefreshTokensRepository;
  readonly now: () => number;
}

/** What an exchange asks to be reduced to, before scope names are resolved. */
export interface RequestedLimits {
  readonly capabilities?: readonly number[];
  /** UIDPs and group names, as sent. */
  readonly scopes?: readonly string[];
}

/** How many bound groups one name search names at once. */
const NAME_SEARCH_SLICE = 200;

/** A group name as a scope: the shape group names have (no '/', so never a UIDP path). */
const SCOPE_NAME = /^[a-z0-9 ._-]{1,63}$/;

/**
 * Reads `cap`, `scopes` and the deprecated `scope` of an exchange request (their union, as
 * published). @throws INVALID_ARGUMENT on an unknown capability or a malformed scope.
 */
export function requestedLimits(req: { cap: readonly string[]; scopes: readonly string[]; scope?: string }): RequestedLimits | undefined {
  const capabilities = requestedCapabilities(req.cap, "cap");
  // `scope` is a proto3 string, so "" means absent; anything else must name something, like
  // every entry of `scopes` (a blank one is refused, never read as "no reduction").
  const scope = req.scope !== undefined && req.scope !== "" ? listValues([req.scope], "scope") : [];
  const scopes = [...new Set([...scope, ...listValues(req.scopes, "scopes")])];
  if (scopes.length > MAX_LIMIT_ENTRIES) throw invalidField("scopes", `must name at most ${MAX_LIMIT_ENTRIES} groups`);
  for (const s of scopes) {
    if (!isUidp(s) && !SCOPE_NAME.test(s)) throw invalidField("scopes", `${JSON.stringify(s)} is neither a group UIDP nor a group name`);
  }
  if (!capabilities && scopes.length === 0) return undefined;
  return { ...(capabilities ? { capabilities } : {}), ...(scopes.length > 0 ? { scopes } : {}) };
}

/** One answer for "no such identity" and "your token does not match it". */
function cannotAssume() {
  return permissionDenied("the presented token cannot assume this identity (it does not exist or its claims do not match)", {
    reason: "IDENTITY_NOT_ASSUMABLE",
  });
}

export function createExchangeService(deps: ExchangeDeps): Partial<ServiceImpl<typeof SecurityTokenService>> {
  const trusted = new Map(deps.trust.identityProviders.map((i) => [i.issuer, i]));

  function audiences(raw: readonly string[]): string[] {
    if (raw.every((a) => a.trim() === "")) throw invalidField("aud", "Audience must be specified (this server's URL, or the registry audience)");
    const auds = listValues(raw, "aud");
    const allowed = new Set([deps.issuer().audience, ...(deps.trust.registryAudience ? [deps.trust.registryAudience] : [])]);
    for (const a of auds) {
      if (!allowed.has(a)) throw invalidField("aud", `${JSON.stringify(a)} is not an audience this issuer serves (allowed: ${[...allowed].join(", ")})`);
    }
    return auds;
  }

  /** The presented token's `iss`, read WITHOUT verification, only to choose where keys come from. */
  function unverifiedIssuer(token: string): string {
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      throw tokenRejected("TOKEN_INVALID", "the presented token is not a JWT");
    }
    if (typeof claims.iss !== "string" || claims.iss === "") throw tokenRejected("TOKEN_INVALID", "the presented token has no issuer");
    return claims.iss;
  }

  async function assume(
    identityUid: string,
    token: string,
    iss: string,
    requested: RequestedLimits | undefined,
  ): Promise<{ identity: IdentityRecord; claims: JWTPayload; limits: TokenLimits | undefined }> {
    const identity = await deps.identities.get(identityUid);
    const rel = identity?.relationship;
    if (!identity || !rel) throw cannotAssume();
    let claims: JWTPayload;
    if (rel.kind === "claim_match") {
      if (!matchesString(rel.issuer, iss)) throw cannotAssume();
      // Keys only from an issuer we were told about: the identity's exact issuer, or a
      // config-trusted one when the identity uses a pattern.
      const config = trusted.get(iss);
      if (!("exact" in rel.issuer) && !config) throw cannotAssume();
      claims = await deps.idp.verify(token, iss, config?.jwksUri);
    } else if (rel.kind === "static_keys") {
      if (rel.issuer !== iss) throw cannotAssume();
      let jwks: { keys: object[] };
      try {
        jwks = JSON.parse(rel.issuerKeys) as { keys: object[] };
      } catch {
        throw cannotAssume();
      }
      claims = await deps.idp.verifyWithKeys(token, iss, jwks);
    } else {
      throw cannotAssume();
    }
    if (!matchesClaims(rel, claims, { defaultAudience: deps.issuer().issuer, now: deps.now() })) throw cannotAssume();
    // Before any write: a refused scope leaves the database as it was.
    const limits = await resolveLimits(identity.uid, requested);
    await deps.identities.touchLastSeen(identity.uid, deps.now());
    return { identity, claims, limits };
  }

  async function signIn(
    token: string,
    iss: string,
    requested: RequestedLimits | undefined,
  ): Promise<{ identity: IdentityRecord; limits: TokenLimits | undefined }> {
    const idp = trusted.get(iss);
    if (!idp?.users) throw permissionDenied("the presented token's issuer is not a trusted identity provider for user sign-in", { reason: "UNTRUSTED_ISSUER" });
    const claims = await deps.idp.verify(token, iss, idp.jwksUri);
    const audience = idp.clientId ?? deps.issuer().issuer;
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(audience)) throw tokenRejected("TOKEN_INVALID", "the presented token was not issued for this server (aud)");
    const email = claims.email_verified === true && typeof claims.email === "string" ? claims.email : "";
    const name = typeof claims.name === "string" && claims.name !== "" ? claims.name : email || (claims.sub as string);
    // The claims stored on the user identity follow the API's NUL rule (validate.ts checkNoNul):
    // PostgreSQL text cannot hold U+0000, so such a token is refused on every engine alike.
    const stored: [string, unknown][] = [
      ["sub", claims.sub],
      ["email", email],
      ["name", name],
    ];
    const withNul = stored.find(([claim, value]) => typeof value === "string" && checkNoNul(claim, value) !== undefined);
    if (withNul) throw tokenRejected("TOKEN_INVALID", `the presented token's ${withNul[0]} claim holds a NUL character (U+0000), which cannot be stored`);
    // Resolved before the user is created: a refused scope leaves the database as it was.
    const limits = await resolveLimits(userIdentityUid(iss, claims.sub as string), requested);
    const identity = await deps.identities.findOrCreateUser({ issuer: iss, subject: claims.sub as string, name: name.slice(0, 256), email }, deps.now());
    return { identity, limits };
  }

  /**
   * The scopes as UIDPs. A UIDP is taken as it is (one the identity holds nothing at simply
   * gives the token nothing there); a name must name exactly one group at or under a group
   * where the identity is bound, else INVALID_ARGUMENT (the search never looks outside
   * those groups, so the answer reveals nothing about other tenants).
   */
  async function resolveLimits(identityUid: string, requested: RequestedLimits | undefined): Promise<TokenLimits | undefined> {
    if (!requested?.scopes) return requested as TokenLimits | undefined;
    const names = requested.scopes.filter((s) => !isUidp(s));
    // The groups the identity is bound at, each standing for its subtree (nested ones dropped).
    const boundAll = names.length > 0 ? [...new Set((await deps.grantsOf(identityUid)).map((g) => g.groupUid))] : [];
    const bound = boundAll.filter((g) => !boundAll.some((other) => other !== g && isAncestorOrSelf(other, g)));
    const scopes: string[] = [];
    for (const s of requested.scopes) {
      if (isUidp(s)) {
        scopes.push(s);
        continue;
      }
      // In slices, so an identity bound in very many groups never builds one statement with
      // more parameters than SQLite takes.
      const found: string[] = [];
      for (let i = 0; i < bound.length && found.length < 2; i += NAME_SEARCH_SLICE) {
        found.push(...(await deps.groupsNamed(s, bound.slice(i, i + NAME_SEARCH_SLICE), 1)));
      }
      if (found.length !== 1) {
        throw invalidField(
          "scopes",
          found.length === 0
            ? `${JSON.stringify(s)} names no group this identity is bound at or under`
            : `${JSON.stringify(s)} names more than one group this identity can see; use the group's UIDP`,
        );
      }
      scopes.push(found[0] as string);
    }
    return { ...requested, scopes };
  }

  async function mintAccess(subject: string, aud: readonly string[], limits: TokenLimits | undefined, act: Record<string, unknown> | undefined) {
    const issuer = deps.issuer();
    const minted = await issuer.mint({
      subject,
      audience: aud.length === 1 ? (aud[0] as string) : aud,
      ttlSeconds: EXCHANGED_TOKEN_TTL_S,
      claims: { ...(act ? { act } : {}), ...limitClaims(limits) },
    });
    return { token: minted, expiry: timestampFromMs((Math.floor(deps.now() / 1000) + EXCHANGED_TOKEN_TTL_S) * 1000) };
  }

  /** A new refresh token of `familyId` and the row that stores it (its hash). */
  function refreshTokenRecord(
    identityUid: string,
    aud: readonly string[],
    limits: TokenLimits | undefined,
    familyId: string,
    familyExpireS: number,
  ): { token: string; expireS: number; record: NewRefreshToken } {
    const iat = Math.floor(deps.now() / 1000);
    const expireS = Math.min(iat + REFRESH_TOKEN_TTL_S, familyExpireS);
    const token = newRefreshToken({ iss: deps.issuer().issuer, sub: identityUid, aud: aud.length === 1 ? (aud[0] as string) : aud, iat, exp: expireS });
    return {
      token,
      expireS,
      record: {
        tokenHash: refreshTokenHash(token),
        familyId,
        identityUid,
        audiences: aud,
        ...(limits?.capabilities ? { capabilities: limits.capabilities } : {}),
        ...(limits?.scopes ? { scopes: limits.scopes } : {}),
        issueTime: iat,
        expireTime: expireS,
        familyExpireTime: familyExpireS,
      },
    };
  }

  async function storeRefreshToken(identityUid: string, aud: readonly string[], limits: TokenLimits | undefined, familyId: string, familyExpireS: number) {
    const issued = refreshTokenRecord(identityUid, aud, limits, familyId, familyExpireS);
    await deps.refreshTokens.issue(issued.record, issued.record.issueTime);
    return issued;
  }

  /**
   * Whether the Exchange asks for a refresh token (REFRESH_REQUEST_HEADER: "true" or "1";
   * absent, "false" or "0": no). Only user sign-in gets one: an assumed identity's owner
   * chose how it is proven (a short-lived CI token, say), and a refresh token would outlive
   * that proof by weeks. @throws INVALID_ARGUMENT for any other value, or with `identity`.
   */
  function refreshRequested(context: HandlerContext, identity: string): boolean {
    const raw = context.requestHeader.get(REFRESH_REQUEST_HEADER);
    if (raw === null) return false;
    const value = raw.trim().toLowerCase();
    if (value === "false" || value === "0" || value === "") return false;
    if (value !== "true" && value !== "1") throw invalidField(REFRESH_REQUEST_HEADER, 'must be "true" or "false"');
    if (identity !== "") throw invalidField(REFRESH_REQUEST_HEADER, "refresh tokens are issued only for user sign-in, not for an assumed identity");
    return true;
  }

  return {
    async exchange(req, context: HandlerContext) {
      const aud = audiences(req.aud);
      if (req.identity !== "" && !isUidp(req.identity)) throw invalidField("identity", "must be a valid UIDP");
      const requested = requestedLimits(req);
      const wantsRefresh = refreshRequested(context, req.identity);
      const token = bearerToken(context.requestHeader.get("authorization"), context.protocolName);
      // Malformed tokens fail the same way whether or not the identity exists.
      const iss = unverifiedIssuer(token);
      // One of our own API tokens is a credential of the wrong kind, not a lack of rights: no
      // identity or IdP ever trusts our issuer, so without this it fell through to the
      // PERMISSION_DENIED of an untrusted issuer. Decided before the identity is looked up,
      // so the answer says nothing about which identities exist.
      if (iss === deps.issuer().issuer) {
        throw tokenRejected("TOKEN_INVALID", "an API token of this server cannot be exchanged; present an identity provider's token");
      }
      let subject: string;
      let act: Record<string, unknown> | undefined;
      let limits: TokenLimits | undefined;
      if (req.identity !== "") {
        const assumed = await assume(req.identity, token, iss, requested);
        subject = assumed.identity.uid;
        limits = assumed.limits;
        act = { iss: assumed.claims.iss, sub: assumed.claims.sub, aud: assumed.claims.aud };
      } else {
        const user = await signIn(token, iss, requested);
        subject = user.identity.uid;
        limits = user.limits;
      }
      const access = await mintAccess(subject, aud, limits, act);
      if (!wantsRefresh) return access;
      // The first token of a new family, with the audiences and reduction of this exchange:
      // a refresh can narrow them, never widen them.
      const nowS = Math.floor(deps.now() / 1000);
      const familyExpireS = nowS + REFRESH_FAMILY_TTL_S;
      const refresh = await storeRefreshToken(subject, aud, limits, randomUUID(), familyExpireS);
      return { ...access, refreshToken: refresh.token };
    },

    async exchangeRefreshToken(req, context: HandlerContext) {
      const aud = audiences(req.aud);
      const requested = requestedLimits(req);
      const presented = presentedRefreshToken(context.requestHeader.get("authorization"), context.protocolName);
      const hash = refreshTokenHash(presented);
      const now = deps.now();
      // Read first, to refuse a bad request before anything is written; the rotation below
      // re-reads the row inside its transaction, so nothing can change in between unseen.
      const found = await deps.refreshTokens.find(hash);
      if (!found) throw tokenRejected("TOKEN_INVALID", "the refresh token is not valid (unknown, revoked or already rotated away)");
      if (found.usedTime === null && found.expireTime <= Math.floor(now / 1000)) {
        throw tokenRejected("TOKEN_EXPIRED", "the refresh token has expired; sign in again");
      }
      for (const a of aud) {
        if (!found.audiences.includes(a)) throw invalidField("aud", `${JSON.stringify(a)} is not an audience this refresh token was issued for`);
      }
      // A refresh stands in for a new sign-in, so it needs what sign-in needs: the user's
      // identity provider still trusted for users. Removing it from the config ends its
      // users' refresh tokens too (they are refused, not revoked: trusting it again revives them).
      const user = await deps.identities.get(found.identityUid);
      const rel = user?.relationship;
      const issuer = rel?.kind === "claim_match" && "exact" in rel.issuer ? rel.issuer.exact : undefined;
      if (issuer === undefined || !trusted.get(issuer)?.users) {
        throw tokenRejected("TOKEN_INVALID", "the refresh token's identity provider is no longer trusted for sign-in; sign in again");
      }
      // The original reduction stays; the request may narrow it further, never widen it.
      const limits = intersectLimits(storedLimits(found), await resolveLimits(found.identityUid, requested));
      let next: { token: string; expireS: number } | undefined;
      const outcome = await deps.refreshTokens.rotate(hash, Math.floor(now / 1000), (previous) => {
        const issued = refreshTokenRecord(previous.identityUid, previous.audiences, limits, previous.familyId, previous.familyExpireTime);
        next = issued;
        return issued.record;
      });
      if (outcome.kind === "reused") {
        throw tokenRejected("REFRESH_TOKEN_REUSED", "the refresh token was already used; every token of its sign-in is now revoked: sign in again");
      }
      if (outcome.kind === "expired") throw tokenRejected("TOKEN_EXPIRED", "the refresh token has expired; sign in again");
      if (outcome.kind === "unknown" || !next) {
        throw tokenRejected("TOKEN_INVALID", "the refresh token is not valid (unknown, revoked or already rotated away)");
      }
      const access = await mintAccess(outcome.previous.identityUid, aud, limits, undefined);
      return { token: access, refreshToken: { token: next.token, expiry: timestampFromMs(next.expireS * 1000) } };
    },
  };
}

/** The reduction a refresh family carries. */
function storedLimits(row: { capabilities?: readonly number[]; scopes?: readonly string[] }): TokenLimits | undefined {
  if (!row.capabilities && !row.scopes) return undefined;
  return { ...(row.capabilities ? { capabilities: row.capabilities } : {}), ...(row.scopes ? { scopes: row.scopes } : {}) };
}
