/**
 * Top frames of a V8 .cpuprofile (what `npm run bench -- --profile` writes for the Trellis
 * process, or `node --cpu-prof` produces), by self time or, with `--total`, by inclusive time
 * (the samples in which the frame is anywhere on the stack: what a call costs with everything
 * it calls). Also a CLI:
 *   npx tsx bench/profile-top.ts bench/results/profiles/rest-get.cpuprofile [N] [--total]
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Frame {
  readonly frame: string;
  readonly selfMs: number;
  readonly pct: number;
}

export function topSelfFrames(file: string, n = 15, inclusive = false): Frame[] {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const nameOf = new Map<number, string>();
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${shorten(url)}:${lineNumber + 1}` : "";
    nameOf.set(node.id, `${functionName || "(anonymous)"}${where ? ` ${where}` : ""}`);
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    if (!inclusive) {
      const name = nameOf.get(id) ?? "?";
      self.set(name, (self.get(name) ?? 0) + dt);
      return;
    }
    // Each frame once per sample, however often it recurs on the stack.
    const seen = new Set<string>();
    for (let node: number | undefined = id; node !== undefined; node = parentOf.get(node)) {
      const name = nameOf.get(node) ?? "?";
      if (!seen.has(name)) {
        seen.add(name);
        self.set(name, (self.get(name) ?? 0) + dt);
      }
    }
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
  const args = process.argv.slice(2);
  const inclusive = args.includes("--total");
  const [file, n] = args.filter((a) => a !== "--total");
  if (!file) {
    process.stderr.write("usage: tsx bench/profile-top.ts FILE.cpuprofile [N] [--total]\n");
    process.exit(2);
  }
  for (const f of topSelfFrames(file, Number(n ?? 20), inclusive))
    process.stdout.write(`${f.pct.toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(6)} ms  ${f.frame}\n`);
}
