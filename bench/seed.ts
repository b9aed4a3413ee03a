/**
 * Seeds a fresh data directory in bulk, straight through SQL in one transaction (the API
 * would take minutes for 100k rows): the real schema and migrations come from openDatabase.
 *
 * Shape (full size): 10 organizations × 9 folders × 10 sub-folders = 1 000 groups over 3
 * levels; 10 000 identities spread over them; one more organization ("deep") holding the
 * List-depth rows as direct children; and an empty organization that CreateGroup writes into.
 */
import { randomBytes } from "node:crypto";
import { openDatabase } from "../src/store/sqlite/db.js";

export interface SeedSize {
  readonly orgs: number;
  readonly foldersPerOrg: number;
  readonly subfoldersPerFolder: number;
  readonly identities: number;
  /** Children of the deep organization (List depth). */
  readonly deepRows: number;
}

export const FULL_SEED: SeedSize = { orgs: 10, foldersPerOrg: 9, subfoldersPerFolder: 10, identities: 10_000, deepRows: 1_000_050 };
export const QUICK_SEED: SeedSize = { orgs: 3, foldersPerOrg: 3, subfoldersPerFolder: 3, identities: 100, deepRows: 2_100 };

export interface Fixture {
  readonly size: SeedSize;
  /** Number of groups in the 3-level tree (excluding the deep and writes organizations). */
  readonly treeGroups: number;
  /** A sub-folder (third level): the GetGroup target on every door. */
  readonly getUid: string;
  /** An organization whose descendants the filtered List pages through. */
  readonly listOrg: string;
  readonly deepOrg: string;
  readonly writesOrg: string;
  readonly seconds: number;
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

export function seed(dataDir: string, size: SeedSize): Fixture {
  const t0 = performance.now();
  const opened = openDatabase(dataDir);
  try {
    const client = opened.db.$client;
    const insertGroup = client.prepare(
      "INSERT INTO groups (uid, parent_uid, name, description, verified, kind, create_time, update_time) VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
    );
    const insertIdentity = client.prepare("INSERT INTO identities (uid, parent_uid, name, description, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?)");
    const base = Date.now() - 86_400_000;
    let t = base;
    const group = (parent: string | null, name: string, kind = 2) => {
      const uid = parent === null ? hex(20) : `${parent}/${hex(8)}`;
      t += 1;
      insertGroup.run(uid, parent, name, `benchmark fixture ${name}`, kind, t, t);
      return uid;
    };
    const tree: string[] = [];
    const subfolders: string[] = [];
    const orgs: string[] = [];
    let deepOrg = "";
    let writesOrg = "";
    client.transaction(() => {
      for (let o = 0; o < size.orgs; o++) {
        const org = group(null, `org-${o}`);
        orgs.push(org);
        tree.push(org);
        for (let f = 0; f < size.foldersPerOrg; f++) {
          const folder = group(org, `folder-${o}-${f}`);
          tree.push(folder);
          for (let s = 0; s < size.subfoldersPerFolder; s++) {
            const sub = group(folder, `sub-${o}-${f}-${s}`);
            tree.push(sub);
            subfolders.push(sub);
          }
        }
      }
      for (let i = 0; i < size.identities; i++) {
        const parent = tree[i % tree.length] as string;
        t += 1;
        insertIdentity.run(`${parent}/${hex(8)}`, parent, `identity-${i}`, "benchmark fixture identity", t, t);
      }
      deepOrg = group(null, "deep");
      for (let i = 0; i < size.deepRows; i++) group(deepOrg, `deep-${i}`);
      writesOrg = group(null, "writes");
    })();
    client.pragma("wal_checkpoint(TRUNCATE)");
    client.exec("ANALYZE");
    return {
      size,
      treeGroups: tree.length,
      getUid: subfolders[Math.floor(subfolders.length / 2)] as string,
      listOrg: orgs[0] as string,
      deepOrg,
      writesOrg,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    opened.close();
  }
}
