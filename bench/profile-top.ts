/**
 * Top self-time frames of a V8 .cpuprofile (what `npm run bench -- --profile` writes for the
 * Trellis process, or `node --cpu-prof` produces). Also a CLI:
 *   npx tsx bench/profile-top.ts bench/results/profiles/rest-get.cpuprofile [N]
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Frame {
  readonly frame: string;
  readonly selfMs: number;
  readonly pct: number;
}

export function topSelfFrames(file: string, n = 15): Frame[] {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const nameOf = new Map<number, string>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${shorten(url)}:${lineNumber + 1}` : "";
    nameOf.set(node.id, `${functionName || "(anonymous)"}${where ? ` ${where}` : ""}`);
  }
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const name = nameOf.get(id) ?? "?";
    self.set(name, (self.get(name) ?? 0) + dt);
  });
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([frame, us]) => ({ frame, selfMs: us / 1000, pct: total > 0 ? (100 * us) / total : 0 }));
}

/** node_modules/<pkg>/... or the path inside the repo, instead of a long file URL. */
function shorten(url: string): string {
  const p = url.replace(/^file:\/\//, "");
  const nm = p.lastIndexOf("node_modules/");
  if (nm >= 0) return p.slice(nm + "node_modules/".length);
  const root = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
  return p.startsWith(root) ? p.slice(root.length + 1) : p;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [file, n] = process.argv.slice(2);
  if (!file) {
    process.stderr.write("usage: tsx bench/profile-top.ts FILE.cpuprofile [N]\n");
    process.exit(2);
  }
  for (const f of topSelfFrames(file, Number(n ?? 20))) process.stdout.write(`${f.pct.toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(6)} ms  ${f.frame}\n`);
}
