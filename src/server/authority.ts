/**
 * Is the request's authority (HTTP/1.1 `Host`, HTTP/2 `:authority`, or `host` when an h2
 * request has no `:authority`) a usable `host[:port]`?
 *
 * Why it matters: connect-node and the fast doors build `context.url` with
 * `new URL(path, scheme://authority)`, and that throws on a host the URL standard refuses
 * (`%zz`, `a.09`, `1.2.3.999`, a port over 65535, a broken `xn--` label). Before this check
 * such a request threw out of the front door and stopped the process. The server answers
 * every door from one port whatever the authority says (it does not route by host), so a
 * bad one is simply the client's error: the front door refuses it before any door runs.
 *
 * Valid means both:
 * - RFC 3986 syntax without userinfo: a bracketed IP literal or a reg-name (unreserved,
 *   sub-delims, percent-escapes), then an optional `:` and port digits. This keeps `a@b`,
 *   `a/b`, `a?b`, spaces and the like out, which the URL parser would otherwise read as
 *   userinfo, path or query;
 * - the URL standard's host parser accepts it (`URL.canParse`), which is exactly the parser
 *   that would throw later, so a value that passes here cannot make `new URL` throw.
 *
 * Cost: a client sends one authority on every request, so the last one accepted is
 * compared first (one string comparison); others are looked up in a small bounded set of
 * recently accepted values, and only a new value is parsed. Refused values are not
 * remembered, so hostile ones cannot evict good ones.
 */

/** Well above the longest DNS name (253) with a port (`:65535`) and IPv6 literals. */
const MAX_AUTHORITY_LENGTH = 300;
/** How many distinct accepted authorities are remembered before the set starts over. */
const REMEMBERED = 256;

const AUTHORITY_SYNTAX = /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::[0-9]{0,5})?$/;

let lastAccepted: string | undefined;
const accepted = new Set<string>();

/** The authority a request names, as connect-node reads it (undefined when there is none). */
export function authorityOf(req: { readonly headers: { readonly host?: string } } & { readonly authority?: string }): string | undefined {
  return "authority" in req ? req.authority : req.headers.host;
}

/** True when `authority` is a host[:port] from which a URL can be built (module comment). */
export function isValidAuthority(authority: string | undefined): authority is string {
  if (authority === undefined) return false;
  if (authority === lastAccepted) return true;
  if (accepted.has(authority)) {
    lastAccepted = authority;
    return true;
  }
  if (authority.length > MAX_AUTHORITY_LENGTH || !AUTHORITY_SYNTAX.test(authority)) return false;
  if (!URL.canParse(`http://${authority}`)) return false;
  if (accepted.size >= REMEMBERED) accepted.clear();
  accepted.add(authority);
  lastAccepted = authority;
  return true;
}
