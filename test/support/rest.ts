import http from "node:http";
import { defaultAuthHeaders } from "./auth.js";

/**
 * Plain-fetch REST client for tests: returns status, headers and the parsed JSON body.
 * Sends the test server's operator token unless `headers.authorization` is given; an empty
 * `authorization` sends no header at all (auth tests).
 */
export interface RestResponse {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected structurally
  readonly body: any;
}

export async function rest(baseUrl: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<RestResponse> {
  const withAuth: Record<string, string> = { ...defaultAuthHeaders(baseUrl), ...headers };
  if (withAuth.authorization === "") delete withAuth.authorization;
  if (headers["x-test-raw"]) return raw(baseUrl, method, path, body, withAuth);
  const init: RequestInit = { method, headers: withAuth };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array ? (body as string) : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(baseUrl + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/**
 * Sends the path byte for byte with node:http (fetch normalises "/.." and refuses a body on
 * GET, which some hostile-input tests need). Selected by the header `x-test-raw: 1`.
 */
function raw(baseUrl: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<RestResponse> {
  const u = new URL(baseUrl);
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: {
          ...(headers.authorization ? { authorization: headers.authorization } : {}),
          ...(payload ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (c) => {
          text += c;
        });
        res.on("end", () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers, body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
