/**
 * Storage ceilings measured in-process on the server core, in the same run as the HTTP
 * scenarios: what better-sqlite3 alone costs for the same List page (query + JSON.stringify,
 * the floor under "REST List page") and for one autocommit INSERT with synchronous=FULL
 * (the floor under CreateGroup writes/s).
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { databaseFile, openDatabase } from "../../src/store/db.js";
import type { RawResult, RawTask } from "./control.js";
import type { HostConfig } from "./host.js";

export function runRaw(task: RawTask, seconds: number, config: HostConfig): RawResult {
  return task.kind === "query-json" ? queryJson(task.sql, task.params, seconds, config) : insertFull(seconds, config);
}

function timed(seconds: number, op: () => void): RawResult {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  let ops = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) op();
    ops += 20;
  }
  const cpu = process.cpuUsage(cpu0);
  return { ops, seconds: (performance.now() - t0) / 1000, cpuUs: cpu.user + cpu.system };
}

function queryJson(sql: string, params: readonly (string | number)[], seconds: number, config: HostConfig): RawResult {
  const db = new Database(databaseFile(required(config.dataDir)), { readonly: true, fileMustExist: true });
  try {
    const stmt = db.prepare(sql);
    return timed(seconds, () => {
      JSON.stringify({ groups: stmt.all(...params) });
    });
  } finally {
    db.close();
  }
}

/** Single-row autocommit inserts into a scratch copy of the schema, with the server's pragmas. */
function insertFull(seconds: number, config: HostConfig): RawResult {
  const dir = fs.mkdtempSync(path.join(required(config.scratchDir), "raw-insert-"));
  const opened = openDatabase(dir);
  try {
    const client = opened.db.$client;
    if (client.pragma("synchronous", { simple: true }) !== 2) throw new Error("expected synchronous=FULL");
    const stmt = client.prepare(
      "INSERT INTO groups (uid, parent_uid, name, description, verified, kind, create_time, update_time) VALUES (?, NULL, ?, '', 0, 0, ?, ?)",
    );
    let n = 0;
    return timed(seconds, () => {
      const now = Date.now();
      stmt.run(randomBytes(20).toString("hex"), `raw-${n++}`, now, now);
    });
  } finally {
    opened.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function required(v: string | undefined): string {
  if (v === undefined) throw new Error("raw target: missing configuration");
  return v;
}
