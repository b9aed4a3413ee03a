import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { GroupSchema, ListGroupsResponseSchema } from "../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { jsonWriterFor } from "../src/transcode/json-writer.js";
const items = Array.from({ length: 50 }, (_, i) => create(GroupSchema, { uid: `0123456789abcdef0123456789abcdef01234567/${(1000+i).toString(16)}aabbccdd/${i}0123456789abcde`, name: `folder-${i}`, description: "a folder of the bench seed", createTime: timestampFromMs(1763900000000 + i * 1000), updateTime: timestampFromMs(1763900000000 + i * 2000) }));
const resp = create(ListGroupsResponseSchema, { groups: items, nextPageToken: "x".repeat(120), totalCount: 100000n } as never);
const w = jsonWriterFor(ListGroupsResponseSchema)!;
let s = 0;
function t(name: string, f: () => unknown) { for (let i = 0; i < 3000; i++) f(); const n = 20000; const t0 = process.hrtime.bigint(); for (let i = 0; i < n; i++) s += (f() as string).length ?? 1; console.log(name, Number(process.hrtime.bigint() - t0) / n / 1000, "µs"); }
const obj = w(resp);
t("writer", () => { w(resp); return "x"; });
t("stringify(obj)", () => JSON.stringify(obj));
t("writer+stringify", () => JSON.stringify(w(resp)));
console.log(JSON.stringify(obj).length);
// prototype: direct text
const q = JSON.stringify;
import { formatMillis } from "../src/transcode/json-writer.js";
function ts(t: any) { return '"' + formatMillis(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)) + '"'; }
function g(m: any) {
  let s = '{"uid":' + q(m.uid) + ',"name":' + q(m.name) + ',"description":' + q(m.description);
  if (m.createTime) s += ',"createTime":' + ts(m.createTime);
  if (m.updateTime) s += ',"updateTime":' + ts(m.updateTime);
  s += ',"resourceLimits":{}';
  return s + "}";
}
function l(r: any) { let s = '{"groups":['; const a = r.groups; for (let i = 0; i < a.length; i++) { if (i) s += ","; s += g(a[i]); } return s + '],"nextPageToken":' + q(r.nextPageToken) + ',"totalCount":"' + r.totalCount + '"}'; }
t("text", () => l(resp));
t("text+flatten-write", () => { const x = l(resp); return Buffer.from(x).toString("latin1"); });
t("buffer of stringify", () => Buffer.from(JSON.stringify(w(resp))).toString("latin1"));
console.log(l(resp).slice(0, 300)); console.log(JSON.stringify(obj).slice(0,300));
