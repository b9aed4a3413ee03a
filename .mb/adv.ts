import fs from "node:fs"; import os from "node:os"; import path from "node:path";
const root = process.argv[2];
const { openDatabase } = await import(`${root}/src/store/db.ts`);
const { createGroupsRepository } = await import(`${root}/src/store/groups.ts`);
const adv = await import(`${root}/src/store/advisories.ts`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "advmb-"));
const opened = openDatabase(dir); const db = opened.db;
const org = (await createGroupsRepository(db).create({ parentUid: null, name: "o", description: "", verified: false, kind: 0 }, 1)).uid;
db.transaction((tx: any) => { for (let i = 0; i < 5000; i++) adv.upsertAdvisoryInTx(tx, org, { advisoryId: `CGA-${i}`, legacyAdvisoryId: null, author: "x", artifactName: `pkg-${i % 50}`, artifactType: i % 2 ? "apk" : "oci", artifactArchitecture: "x86_64", componentName: `c-${i % 7}`, componentLocation: "/", componentType: "apk", aliases: [`CVE-${i}`], severities: [], deleteTime: null, createTime: i, updateTime: i, events: [{ createTime: i, author: `a${i % 3}`, reviewer: "r", reviewState: 2, issue: null, eventType: 1 + (i % 3), body: "{}", findings: null }] }, 1); });
const repo = adv.createAdvisoriesRepository(db);
const filters = [{ uidp: { childrenOf: org }, artifactTypes: ["apk"] }, { uidp: {}, eventAuthors: ["a1"], artifactNames: ["pkg-3", "pkg-5"] }];
for (const f of filters) {
  const page = { order: "uid", desc: false, offset: 0, limit: 50 };
  for (let i = 0; i < 300; i++) await repo.list(f, page);
  const n = 2000; const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await repo.list(f, page);
  console.log(JSON.stringify(f).slice(0, 60), (Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(1), "µs/list");
}
opened.close(); fs.rmSync(dir, { recursive: true });
