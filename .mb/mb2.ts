import { create } from "@bufbuild/protobuf";
import { timestampFromMs, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { GroupSchema } from "../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import { groupToProto } from "../src/services/iam/convert.js";
const rows = Array.from({ length: 50 }, (_, i) => ({ uid: `0123456789abcdef0123456789abcdef01234567/${i}`, name: `folder-${i}`, description: "d", verified: false, kind: 0, createTime: 1763900000000 + i, updateTime: 1763900000000 + i, parentUid: null } as any));
let s = 0;
function t(name: string, f: () => unknown) { for (let i = 0; i < 3000; i++) f(); const n = 20000; const t0 = process.hrtime.bigint(); for (let i = 0; i < n; i++) s += (f() as any).length; console.log(name, Number(process.hrtime.bigint() - t0) / n / 1000, "µs"); }
t("groupToProto x50", () => rows.map(groupToProto));
t("timestampFromMs x100", () => rows.map((r) => [timestampFromMs(r.createTime), timestampFromMs(r.updateTime)]));
t("create Group no ts x50", () => rows.map((r) => create(GroupSchema, { uid: r.uid, name: r.name, description: r.description, resourceLimits: {}, verified: r.verified, kind: r.kind })));
t("create Group empty x50", () => rows.map((r) => create(GroupSchema)));
const TS = "google.protobuf.Timestamp";
function tsLit(ms: number) { const s = Math.floor(ms / 1000); return { $typeName: TS, seconds: BigInt(s), nanos: (ms - s * 1000) * 1_000_000 } as any; }
t("tsLit x100", () => rows.map((r) => [tsLit(r.createTime), tsLit(r.updateTime)]));
t("create Group with tsLit x50", () => rows.map((r) => create(GroupSchema, { uid: r.uid, name: r.name, description: r.description, resourceLimits: {}, verified: r.verified, kind: r.kind, createTime: tsLit(r.createTime), updateTime: tsLit(r.updateTime) })));
console.log(JSON.stringify(timestampFromMs(-1500), (k, v) => typeof v === "bigint" ? String(v) : v), JSON.stringify(tsLit(-1500), (k, v) => typeof v === "bigint" ? String(v) : v));
