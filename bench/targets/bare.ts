/**
 * The ceilings: bare node:http and node:http2 servers answering every request with the same
 * bytes as a real GetGroup response. Nothing a real server could skip is skipped except the
 * work itself, so "Trellis ÷ bare" is the share of the runtime's floor that Trellis reaches.
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";

const headers = (body: Buffer) => ({ "content-type": "application/json", "content-length": body.length });

export function startBareH1(body: Buffer): Promise<string> {
  const server = http.createServer((req, res) => {
    // Drain any request body so keep-alive works for POST too.
    req.resume();
    req.on("end", () => {
      res.writeHead(200, headers(body));
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  return listen(server);
}

export function startBareH2(body: Buffer): Promise<string> {
  const server = http2.createServer({}, (req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, headers(body));
      res.end(body);
    });
  });
  return listen(server);
}

function listen(server: http.Server | http2.Http2Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}
