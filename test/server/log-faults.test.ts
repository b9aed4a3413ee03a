/**
 * Logging never blocks or stops the server: `trellis serve` with stdout and stderr on
 * /dev/full (every write fails with ENOSPC, as on a full file system) starts, answers every
 * door, writes, reads, and stops cleanly on SIGTERM. The drop-and-count logic itself is
 * proved in test/unit/observe/logger.test.ts.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { operatorToken } from "../support/auth.js";
import { rest } from "../support/rest.js";
import { BIN } from "../support/serve.js";
import { closeGrpcClients, rpcTransports } from "../support/transports.js";

/**
 * The server cannot print its URL on a stdout that fails, so it gets a port that was free a
 * moment ago, on a loopback address of its own: the other tests of the suite listen on
 * 127.0.0.1 (and 127.0.0.2), so none of them can take that port in between, and nothing else
 * answers there.
 */
const HOST = "127.0.0.77";
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once something accepts connections on `port` (retrying refusals every 50 ms). */
async function accepting(port: number, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (;;) {
    if (gone) throw new Error("the server exited before it listened");
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, HOST, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The server saves its issuer settings (what an operator token is minted with) just after it
 * starts listening; poll for them (every 50 ms) rather than assume they are there.
 */
async function tokenOnceIssuerIsSaved(dataDir: string, exited: Promise<unknown>): Promise<string> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (;;) {
    try {
      return await operatorToken(dataDir);
    } catch (err) {
      if (gone) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!fs.existsSync("/dev/full"))("logs on a full disk", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-logfull-"));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL"); // a failed (timed-out) run leaves no server behind
    closeGrpcClients();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("a server whose stdout and stderr fail every write (ENOSPC) keeps answering on every door and stops cleanly", async () => {
    const full = fs.openSync("/dev/full", "w");
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, "serve", "--addr", `${HOST}:${port}`, "--data", dataDir], {
      // debug: a line for every call, so every request below tries to log.
      env: { ...process.env, TRELLIS_LOG_LEVEL: "debug" },
      stdio: ["ignore", full, full],
    });
    children.push(child);
    fs.closeSync(full);
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    try {
      await accepting(port, exited);
      const url = `http://${HOST}:${port}`;
      const token = await tokenOnceIssuerIsSaved(dataDir, exited);
      // Many failing log writes, then requests again: nothing hangs, nothing dies.
      for (let round = 0; round < 3; round++) {
        for (const transport of rpcTransports) {
          const client = createClient(GroupsService, transport.create(url, { token }));
          const created = await client.createGroup({ group: { name: `g${round} ${transport.name.replace(/[^a-z0-9]/g, "")}` } });
          expect((await client.getGroup({ uid: created.uid })).uid).toBe(created.uid);
        }
        const listed = await rest(url, "GET", "/iam/v2beta1/groups", undefined, { authorization: `Bearer ${token}` });
        expect(listed.status).toBe(200);
        expect((await rest(url, "GET", "/iam/v2beta1/groups", undefined, { authorization: "" })).status).toBe(401);
      }
      child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      child.kill("SIGKILL");
    }
  });
});
