/**
 * Wiring of authentication and authorization for the composition root (create-app.ts):
 * keys from the database, the token issuer (known once the listen URL is), the two
 * before-call hooks in order, and the well-known documents.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { Db } from "../store/db.js";
import type { Grant } from "../store/role-bindings.js";
import { createAuthenticationHook } from "./authenticate.js";
import { createAuthorizationHook } from "./authorize.js";
import { buildPlans } from "./iam-plan.js";
import { normalizeIssuerUrl, saveIssuerSettings } from "./issuer-settings.js";
import { loadOrCreateSigningKeys, loadSigningKeys, type SigningKeySet } from "./signing-keys.js";
import { createTokenIssuer, type TokenIssuer } from "./tokens.js";
import { createWellKnownHandler, type UserIdpLink } from "./well-known.js";

/** At most one key reload per this many ms when tokens name unknown kids (no DB hammering). */
const KEY_RELOAD_COOLDOWN_MS = 10_000;

export interface AuthOptions {
  readonly db: Db;
  readonly now: () => number;
  readonly services: readonly DescService[];
  readonly grantsOf: (identityUid: string) => Promise<Grant[]>;
  readonly userIdps?: () => readonly UserIdpLink[];
}

export function createAuth(options: AuthOptions) {
  const { db, now } = options;
  let keys: SigningKeySet = loadOrCreateSigningKeys(db, now());
  let lastReload = 0;
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
    start(issuerUrl: string): TokenIssuer {
      const url = normalizeIssuerUrl(issuerUrl);
      saveIssuerSettings(db, { issuer: url, audience: url }, now());
      issuer = createTokenIssuer({
        issuer: url,
        audience: url,
        keys: () => keys,
        reloadKeys: () => {
          if (now() - lastReload < KEY_RELOAD_COOLDOWN_MS) return;
          lastReload = now();
          keys = loadSigningKeys(db) ?? keys;
        },
        now,
      });
      return issuer;
    },
  };
}
