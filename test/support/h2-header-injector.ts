/**
 * A cleartext HTTP/2 (prior knowledge) TCP proxy that adds one more header field to the first
 * header block of every request stream, for sending what Node's own http2 client refuses to
 * send: a second `authorization` entry (ERR_HTTP2_HEADER_SINGLE_VALUE).
 *
 * It parses the client's frames and appends to the HEADERS (or last CONTINUATION) frame that
 * ends a stream's first header block an HPACK "literal header field without indexing — new
 * name" (RFC 7541 §6.2.2) with plain, non-Huffman strings. Such a field leaves the HPACK
 * dynamic table untouched, so the client's and the server's tables stay in step and every
 * other byte is passed through as sent. The server's frames go back unchanged, so any client
 * (node:http2, grpc-js, connect's transports) can be pointed at the proxy and read answers as
 * usual.
 */
import net from "node:net";
import type { AddressInfo } from "node:net";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const HEADERS = 0x1;
const CONTINUATION = 0x9;
const END_HEADERS = 0x4;
const PADDED = 0x8;

export interface HeaderInjector {
  /** http://127.0.0.1:<port>: use it as the server's base URL. */
  readonly url: string;
  close(): Promise<void>;
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1), the first byte's high bits zero. */
function hpackInt(value: number, prefixBits: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [value];
  const out = [max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

function literalField(name: string, value: string): Buffer {
  const n = Buffer.from(name.toLowerCase(), "latin1");
  const v = Buffer.from(value, "latin1");
  return Buffer.concat([Buffer.from([0x00]), Buffer.from(hpackInt(n.length, 7)), n, Buffer.from(hpackInt(v.length, 7)), v]);
}

export async function startHeaderInjector(target: string, name: string, value: string): Promise<HeaderInjector> {
  const to = new URL(target);
  const extra = literalField(name, value);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port), to.hostname);
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.pipe(client);
    let pending = Buffer.alloc(0);
    let sawPreface = false;
    const injected = new Set<number>();
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (!sawPreface) {
        if (pending.length < PREFACE.length) return;
        upstream.write(pending.subarray(0, PREFACE.length));
        pending = pending.subarray(PREFACE.length);
        sawPreface = true;
      }
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        const type = pending[3] as number;
        const flags = pending[4] as number;
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        let frame = pending.subarray(0, 9 + length);
        pending = pending.subarray(9 + length);
        const endsBlock = (type === HEADERS || type === CONTINUATION) && (flags & END_HEADERS) !== 0;
        if (endsBlock && stream !== 0 && !injected.has(stream)) {
          injected.add(stream);
          // Padding sits after the header block fragment: insert before it.
          const padding = type === HEADERS && (flags & PADDED) !== 0 ? (frame[9] as number) : 0;
          const body = frame.subarray(9, 9 + length - padding);
          const newLength = length + extra.length;
          const head = Buffer.from(frame.subarray(0, 9));
          head.writeUIntBE(newLength, 0, 3);
          frame = Buffer.concat([head, body, extra, frame.subarray(9 + length - padding)]);
        }
        upstream.write(frame);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
