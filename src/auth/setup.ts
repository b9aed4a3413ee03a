/**
 * Wiring of authentication and authorization for the composition root (create-app.ts):
 * keys from the database, the token issuer (known once the listen URL is), the two
 * before-call hooks in order, and the well-known documents.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { ServerValues } from "../store/engine.js";
import type { Grant } from "../store/role-bindings.js";
import { createAuthenticationHook } from "./authenticate.js";
import { createAuthorizationHook } from "./authorize.js";
import { buildPlans } from "./iam-plan.js";
import { normalizeIssuerUrl, saveIssuerSettings } from "./issuer-settings.js";
import { parseRevocations, REVOCATIONS_NAME } from "../store/token-revocations.js";
import { loadOrCreateSigningKeys, parseSigningKeySet, SIGNING_KEYS_NAME } from "./signing-keys.js";
import { createTokenIssuer, type TokenIssuer } from "./tokens.js";
import { createWellKnownHandler, type UserIdpLink } from "./well-known.js";

export interface AuthOptions {
  readonly serverValues: ServerValues;
  readonly now: () => number;
  readonly services: readonly DescService[];
  readonly grantsOf: (identityUid: string) => Promise<Grant[]>;
  readonly userIdps?: () => readonly UserIdpLink[];
}

export async function createAuth(options: AuthOptions) {
  const { serverValues, now } = options;
  // Created here on first start; afterwards read through the shared-values watcher, so a
  // rotation by `trellis keys rotate` or another process signs and verifies from the next
  // call on, and a revocation made anywhere on this database fails the token at once.
  // Both rows behind one watcher, so a verification pays for one change check, not two.
  const first = await loadOrCreateSigningKeys(serverValues, now());
  // A revocation leaves the key set object as it was (tokens.ts restarts its cache on a new one).
  let signingBytes: Buffer | undefined;
  let signingSet = first;
  const watched = serverValues.watch([SIGNING_KEYS_NAME, REVOCATIONS_NAME], ([signing, revoked]) => {
    if (signing !== undefined && !(signingBytes !== undefined && signing.equals(signingBytes))) {
      signingSet = parseSigningKeySet(signing) ?? first;
      signingBytes = signing;
    }
    return { keys: signingSet, revocations: parseRevocations(revoked) };
  });
  let seen = watched();
  const keys = () => {
    seen = watched();
    return seen.keys;
  };
  // tokens.ts reads the revocations right after keys() in the same synchronous step.
  const revocations = () => seen.revocations;
  let issuer: TokenIssuer | undefined;
  const plans = buildPlans(options.services);
  const current = () => {
    if (!issuer) throw new Error("the token issuer is used before the server listens");
    return issuer;
  };
  const authenticate = createAuthenticationHook({ verify: (t) => current().verify(t) }, plans);
  const authorize = createAuthorizationHook({ plans, grantsOf: options.grantsOf });

  return {
    plans,
    /** Before-call hooks, in order: who is calling, then may they. */
    hooks: [authenticate, authorize] as const,
    wellKnown: createWellKnownHandler(current, options.userIdps ?? (() => [])),
    issuer: current,
    /** Fixes the issuer URL (default: the listen URL) and records it for local tools. */
    async start(issuerUrl: string): Promise<TokenIssuer> {
      const url = normalizeIssuerUrl(issuerUrl);
      await saveIssuerSettings(serverValues, { issuer: url, audience: url }, now());
      issuer = createTokenIssuer({
        issuer: url,
        audience: url,
        keys,
        revocations,
        now,
      });
      return issuer;
    },
  };
}
