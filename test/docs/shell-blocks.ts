/**
 * The shell blocks of a markdown document, as the docs runner (docs.test.ts) executes them.
 *
 * A shell block is a fenced block whose info string is `sh`, `bash`, `shell`, `console` or
 * `zsh`. What the runner should do with one is said by an HTML comment on the line right
 * before its fence (blank lines allowed in between), invisible in rendered markdown:
 *
 *   <!-- docs-test: skip (why it cannot run in CI) -->   not run; the reason is required
 *   <!-- docs-test: id NAME -->                          run, and docs.test.ts checks its output
 *
 * Inside a block, a command whose trailing comment says `# exits N` (or `# exit N`) must end
 * with status N; every other command must succeed (the block runs under `set -euo pipefail`).
 * The comment is what the reader sees too, so the doc and the check say the same thing.
 */

export interface ShellBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly text: string;
  /** Set when the block is marked `skip (reason)`. */
  readonly skip?: string;
  /** Set when the block is marked `id NAME`. */
  readonly id?: string;
}

export interface ParsedDoc {
  readonly blocks: readonly ShellBlock[];
  /** Malformed or misplaced markers: each must fail the docs test. */
  readonly problems: readonly string[];
}

/**
 * What the docs runners put before a block: bash's strict mode, and `npx trellis` / `npx buf`
 * as npx finds them in a checkout (this checkout's program through tsx, and its buf; the runner
 * passes the checkout as DOCS_ROOT), without npm's own start-up. Like a real npx, the program
 * runs as a child of something that does not hand signals on: `npx trellis serve &` then
 * `kill $!` stops that wrapper and leaves the server running, as it does in a reader's
 * terminal (npm exec runs the program under `sh -c`). The runners report such a survivor.
 */
export const PREAMBLE = `set -euo pipefail
npx() {
  case "\${1-}" in
    trellis) shift; node "$DOCS_ROOT/bin/trellis.mjs" "$@" ;;
    buf) shift; "$DOCS_ROOT/node_modules/.bin/buf" "$@" ;;
    *) echo "docs-test: npx $1 is not available here" >&2; return 127 ;;
  esac
}
`;

const SHELL_LANGS = new Set(["sh", "bash", "shell", "console", "zsh"]);
const MARKER = /^<!--\s*docs-test:(.*?)-->\s*$/;

export function parseShellBlocks(markdown: string): ParsedDoc {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  const problems: string[] = [];
  let pending: { line: number; skip?: string; id?: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const marker = MARKER.exec(line.trim());
    if (marker) {
      if (pending) problems.push(`line ${pending.line}: docs-test marker is not followed by a shell block`);
      pending = { line: i + 1, ...parseDirective((marker[1] as string).trim(), i + 1, problems) };
      continue;
    }
    if (/^\s*<!--.*docs-test/.test(line)) problems.push(`line ${i + 1}: a docs-test marker must be a whole line "<!-- docs-test: ... -->"`);
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence) {
      const lang = fence[1] as string;
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i] as string); i++) body.push(lines[i] as string);
      if (SHELL_LANGS.has(lang)) {
        blocks.push({
          line: start + 1,
          text: body.join("\n"),
          ...(pending?.skip !== undefined ? { skip: pending.skip } : {}),
          ...(pending?.id ? { id: pending.id } : {}),
        });
      } else if (pending) {
        problems.push(`line ${pending.line}: docs-test marker precedes a \`${lang || "plain"}\` block, not a shell block`);
      }
      pending = undefined;
      continue;
    }
    if (pending && line.trim() !== "") {
      problems.push(`line ${pending.line}: docs-test marker is not followed by a shell block`);
      pending = undefined;
    }
  }
  if (pending) problems.push(`line ${pending.line}: docs-test marker is not followed by a shell block`);
  return { blocks, problems };
}

function parseDirective(text: string, line: number, problems: string[]): { skip?: string; id?: string } {
  const skip = /^skip\s*(?:\((.*)\))?$/.exec(text);
  if (skip) {
    const reason = (skip[1] ?? "").trim();
    if (reason === "") problems.push(`line ${line}: "skip" needs a reason: <!-- docs-test: skip (why) -->`);
    return { skip: reason };
  }
  const id = /^id\s+([a-z0-9-]+)$/.exec(text);
  if (id) return { id: id[1] as string };
  problems.push(`line ${line}: unknown docs-test directive ${JSON.stringify(text)} (use "skip (reason)" or "id NAME")`);
  return {};
}

/**
 * The block as a bash script: each command marked `# exits N` is wrapped so that its status
 * is checked instead of stopping the script. A command continued with a trailing `\` is one
 * command; the marker goes on its last line.
 */
export function toScript(block: string): string {
  const out: string[] = [];
  let command: string[] = [];
  for (const line of block.split("\n")) {
    command.push(line);
    if (/\\$/.test(line)) continue;
    const expected = /\s#.*\bexits?\s+(\d+)\b/.exec(line);
    if (expected) {
      const n = expected[1] as string;
      const shown = JSON.stringify(command.join(" ").replace(/\s+/g, " ").trim());
      // The comment ends at the newline, so the command keeps its own text.
      out.push(
        "if",
        ...command,
        "then __docs_rc=0; else __docs_rc=$?; fi",
        `if [ "$__docs_rc" != ${n} ]; then echo "docs-test: expected exit ${n}, got $__docs_rc:" ${shown} >&2; exit 99; fi`,
      );
    } else {
      out.push(...command);
    }
    command = [];
  }
  out.push(...command);
  return out.join("\n");
}
