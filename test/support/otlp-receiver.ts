/**
 * A tiny OTLP/HTTP receiver for the tracing tests: it accepts POST /v1/traces, keeps every
 * request (content type, raw body) and, for OTLP/JSON bodies, the spans flattened with their
 * resource, so a test can look for a span by name and trace id.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly events: { name: string; attributes: Record<string, unknown> }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly status: { code?: number; message?: string };
  readonly resource: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
  }
  return out;
}

export interface OtlpReceiver {
  /** The base URL to put in OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  readonly requests: { path: string; contentType: string; body: Buffer }[];
  readonly spans: ReceivedSpan[];
  /** Resolves with the spans once `predicate` holds for them (checked on each export; fails after `ms`). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver["requests"] = [];
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers["content-type"] ?? "");
      requests.push({ path: req.url ?? "", contentType, body });
      if (contentType.startsWith("application/json")) {
        const parsed = JSON.parse(body.toString()) as {
          resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of parsed.resourceSpans ?? []) {
          const resource = attributesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: String(s.traceId),
                spanId: String(s.spanId),
                parentSpanId: String(s.parentSpanId ?? ""),
                name: String(s.name),
                kind: Number(s.kind),
                attributes: attributesOf(s.attributes as OtlpAttribute[]),
                events: ((s.events as { name: string; attributes?: OtlpAttribute[] }[]) ?? []).map((e) => ({
                  name: e.name,
                  attributes: attributesOf(e.attributes),
                })),
                status: (s.status as ReceivedSpan["status"]) ?? {},
                resource,
              });
            }
          }
        }
      }
      for (const check of [...waiters]) check();
      res.writeHead(200, { "content-type": contentType || "application/json" });
      res.end(contentType.startsWith("application/json") ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    waitFor(predicate, ms = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`spans never matched; got ${JSON.stringify(spans.map((s) => [s.name, s.traceId]))}`));
        }, ms);
        const check = () => {
          if (!predicate(spans)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(spans);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
