/**
 * Tokens for tests. Every test server gets an operator token (minted with the server's own
 * key, exactly as `trellis auth token --local` does) that the support clients send by
 * default, so tests about other features need not think about authentication. Auth tests opt
 * out per call: `rest(..., { authorization: "" })` sends no header, a transport created with
 * `{ token: null }` sends none, and any explicit `authorization` header wins.
 */
import { mintLocalOperatorToken } from "../../src/auth/local-token.js";

const defaultTokens = new Map<string, string>();

/** Operator tokens of test servers live long: tests move the server clock by days. */
export const TEST_OPERATOR_TTL_S = 365 * 24 * 60 * 60;

function originOf(url: string): string {
  return new URL(url).origin;
}

/** Makes `token` the default for requests to `baseUrl`'s origin. */
export function setDefaultToken(baseUrl: string, token: string): void {
  defaultTokens.set(originOf(baseUrl), token);
}

/** The default token for a URL's origin, if a test server registered one. */
export function defaultToken(url: string): string | undefined {
  return defaultTokens.get(originOf(url));
}

/** `{authorization: "Bearer …"}` for the default token, or `{}`. */
export function defaultAuthHeaders(url: string): Record<string, string> {
  const token = defaultToken(url);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** An operator token for the server on `dataDir` (the CLI's code path). */
export function operatorToken(dataDir: string, subject?: string): Promise<string> {
  return mintLocalOperatorToken({ dataDir, subject, ttlSeconds: TEST_OPERATOR_TTL_S });
}
