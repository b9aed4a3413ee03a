/**
 * Reading import input: files and directories → a stream of raw records, each with where it
 * came from (file and line or element index) so a rejection can point at it.
 *
 * - `*.ndjson` / `*.jsonl`: one record per non-empty line, streamed (feeds of any size).
 * - `*.json`: one document: an array of records, an OSV document or a single record.
 * Directories are walked recursively in name order; other files are ignored. A line or
 * file that is not JSON becomes a record whose `error` says so (it is rejected, not fatal).
 */
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

export interface RawRecord {
  /** "file:line" or "file[index]" or "file". */
  readonly where: string;
  readonly value?: unknown;
  /** Set when the input could not even be parsed. */
  readonly error?: string;
  /** Bytes of input consumed up to the end of this record, across all files (for progress). */
  readonly bytesDone: number;
}

const RECORD_EXTENSIONS = new Set([".json", ".ndjson", ".jsonl"]);

/** The input files under the given paths, in a stable order. @throws Error for a missing path. */
export function listInputFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name));
    } else if (RECORD_EXTENSIONS.has(path.extname(p).toLowerCase())) {
      out.push(p);
    }
  };
  for (const p of paths) {
    if (!fs.existsSync(p)) throw new Error(`no such file or directory: ${p}`);
    if (fs.statSync(p).isFile() && !RECORD_EXTENSIONS.has(path.extname(p).toLowerCase())) {
      throw new Error(`${p}: expected a .json, .ndjson or .jsonl file`);
    }
    walk(p);
  }
  return out;
}

export function totalBytes(files: readonly string[]): number {
  return files.reduce((n, f) => n + fs.statSync(f).size, 0);
}

function parse(text: string): { value?: unknown; error?: string } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (err) {
    return { error: `not valid JSON (${(err as Error).message})` };
  }
}

/** Every record of every file, in order. */
export async function* readRecords(files: readonly string[]): AsyncGenerator<RawRecord> {
  let base = 0;
  for (const file of files) {
    const size = fs.statSync(file).size;
    if (path.extname(file).toLowerCase() === ".json") {
      const parsed = parse(fs.readFileSync(file, "utf8"));
      if (parsed.error !== undefined || !Array.isArray(parsed.value)) {
        yield { where: file, ...parsed, bytesDone: base + size };
      } else {
        const items = parsed.value as unknown[];
        for (let i = 0; i < items.length; i++) {
          yield { where: `${file}[${i}]`, value: items[i], bytesDone: base + Math.round((size * (i + 1)) / items.length) };
        }
      }
    } else {
      const lines = readline.createInterface({ input: fs.createReadStream(file, "utf8"), crlfDelay: Number.POSITIVE_INFINITY });
      let n = 0;
      let done = base;
      for await (const line of lines) {
        n++;
        done += Buffer.byteLength(line) + 1;
        if (line.trim() === "") continue;
        yield { where: `${file}:${n}`, ...parse(line), bytesDone: Math.min(done, base + size) };
      }
    }
    base += size;
  }
}
