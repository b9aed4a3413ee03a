/**
 * `trellis auth token --local` as a real process, next to a running `trellis serve`: it
 * prints the token and nothing else, the token is an operator token the server accepts,
 * and it fails clearly on a data directory the server never used. On PostgreSQL (project
 * on-postgres) the server and the tool both take `--database URL`, and the tool also fails
 * clearly on a database no server has used.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminQuery, dropPostgresDatabase, newPostgresDatabase, TEST_ENGINE } from "../support/postgres.js";
import { BIN, startServe } from "../support/serve.js";
import { type ChildStore, freshChildStore } from "../support/store-target.js";

const run = promisify(execFile);
let store: ChildStore;
beforeAll(async () => {
  store = await freshChildStore("localtoken");
});
afterAll(() => store.remove());

describe("trellis auth token --local", () => {
  it("prints only an operator token, minted while the server runs, that the server accepts", async () => {
    const server = await startServe(["--addr", "127.0.0.1:0", ...store.args]);
    try {
      const { stdout, stderr } = await run(process.execPath, [BIN, "auth", "token", "--local", ...store.args, "--subject", "alice"]);
      expect(stderr).toBe("");
      expect(stdout).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
      const token = stdout.trim();
      const claims = decodeJwt(token);
      expect(claims).toMatchObject({ iss: server.url, aud: server.url, sub: "operator:alice", trellis_operator: true });
      expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
      expect(typeof claims.jti).toBe("string");
      const ok = await fetch(`${server.url}/iam/v2beta1/groups`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      const none = await fetch(`${server.url}/iam/v2beta1/groups`);
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toBe("Bearer");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("explains a data directory without a server key, and rejects bad usage with exit 2", async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "trellis-localtoken-empty-"));
    try {
      const missing = await run(process.execPath, [BIN, "auth", "token", "--local", "--data", empty]).catch((e) => e);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe("");
      expect(missing.stderr).toMatch(/start the server once/);
      const usage = await run(process.execPath, [BIN, "auth", "token", "--local", "--ttl", "0"]).catch((e) => e);
      expect(usage.code).toBe(2);
      // Without --local, `auth token` prints the login's token: none here, so the auth exit code.
      const env = { ...process.env, XDG_CONFIG_HOME: empty, TRELLIS_TOKEN: "" };
      const noLogin = await run(process.execPath, [BIN, "auth", "token"], { env }).catch((e) => e);
      expect(noLogin.code).toBe(3);
      expect(noLogin.stderr).toMatch(/not logged in/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it.runIf(TEST_ENGINE === "postgres")("explains a PostgreSQL database no server has used (--database), creating nothing in it", async () => {
    const empty = await newPostgresDatabase("localtoken_empty");
    try {
      const missing = await run(process.execPath, [BIN, "auth", "token", "--local", "--database", empty.url]).catch((e) => e);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe("");
      expect(missing.stderr).toMatch(/no Trellis database at postgres:\/\/postgres:\*\*\*@\S+; start the server once with --database postgres:/);
      expect(missing.stderr).not.toContain(new URL(empty.url).password);
      const tables = await adminQuery(
        empty.url,
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
      );
      expect(tables.rows).toEqual([]);
    } finally {
      await dropPostgresDatabase(empty.name);
    }
  });
});
