/**
 * `trellis completion bash|zsh|fish`: prints a completion script generated from the program's
 * own command tree, so it can never drift from the commands that exist.
 *
 *   bash: source <(trellis completion bash)        (or save it in bash-completion's dir)
 *   zsh:  trellis completion zsh > "${fpath[1]}/_trellis"
 *   fish: trellis completion fish > ~/.config/fish/completions/trellis.fish
 *
 * Besides commands and options, the scripts complete option values: an option with fixed
 * choices (`-o`, `--protocol`, `--log-level`) offers them; an option or argument that takes a
 * group (`--group`, `--parent`, `--descendants-of`, `iam groups get <group>`) offers the
 * names of the groups the caller can see, asked of the server at completion time through the
 * hidden `trellis __complete groups` (same API, token and CA as any command; silent and
 * empty when the server cannot be asked); an option that takes a file offers files.
 */
import { Argument, type Command, type Option } from "commander";
import { GroupsService } from "../../../gen/chainguard/platform/iam/v2beta1/groups_pb.js";
import type { Io } from "../io.js";
import { connect } from "../client.js";

export const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

export function registerCompletion(program: Command, io: Io): void {
  program
    .command("completion")
    .description("print a shell completion script")
    .addArgument(new Argument("<shell>", "the shell to complete for").choices(SHELLS))
    .addHelpText(
      "after",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: "${fpath[1]}" is zsh's, for the user's shell to expand
      '\nbash: source <(trellis completion bash)\nzsh:  trellis completion zsh > "${fpath[1]}/_trellis"\nfish: trellis completion fish > ~/.config/fish/completions/trellis.fish',
    )
    .action((shell: Shell) => {
      io.out(shell === "bash" ? bashScript(program) : shell === "zsh" ? zshScript(program) : fishScript(program));
    });

  // What the scripts call for group names: one name per line, nothing at all on any failure
  // (a completion must never print an error into the user's command line).
  program
    .command("__complete", { hidden: true })
    .argument("<what>")
    .action(async (what: string, _o: unknown, cmd: Command) => {
      if (what !== "groups") return;
      try {
        const ctx = await connect(cmd, { ...io, err: () => {}, env: { ...io.env, TRELLIS_RETRY_DELAY_MS: "0" } });
        const res = await ctx.client(GroupsService).listGroups({ pageSize: 200 }, { timeoutMs: 3000 });
        const names = [...new Set(res.groups.map((g) => g.name))].sort();
        io.out(names.map((n) => `${n}\n`).join(""));
      } catch {
        // Nothing to offer.
      }
    });
}

/** What an option's value is, for completion. */
type ValueKind = { kind: "choices"; values: readonly string[] } | { kind: "group" } | { kind: "file" } | { kind: "any" };

function valueKind(o: Option): ValueKind | undefined {
  if (!o.required && !o.optional) return undefined; // a switch: no value
  if (o.argChoices) return { kind: "choices", values: o.argChoices };
  if (/<group>/.test(o.flags)) return { kind: "group" };
  if (/<(file|path|dir)>/.test(o.flags) || /^--(config|tls-cert|tls-key|ca-cert|data|identity-token)\b/.test(o.long ?? "")) return { kind: "file" };
  return { kind: "any" };
}

interface OptionInfo {
  readonly long: string;
  readonly short: string | undefined;
  readonly description: string;
  readonly value: ValueKind | undefined;
}

interface Node {
  /** Space-joined subcommand path below the program ("" for the program itself). */
  readonly path: string;
  readonly subcommands: readonly { name: string; description: string }[];
  readonly options: readonly OptionInfo[];
  /** The first positional argument takes a group. */
  readonly groupArgument: boolean;
}

/** Every command in the tree with its subcommands and its (and its ancestors') options. */
function nodes(program: Command): Node[] {
  const out: Node[] = [];
  const visit = (cmd: Command, path: string[], inherited: readonly OptionInfo[]) => {
    const own = cmd.options.filter((o) => o.long && !o.hidden).map((o) => ({ long: o.long!, short: o.short, description: o.description, value: valueKind(o) }));
    const options = [...inherited, ...own, { long: "--help", short: "-h", description: "show help", value: undefined }];
    const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    const groupArgument = cmd.registeredArguments[0]?.name() === "group";
    out.push({ path: path.join(" "), subcommands: subs.map((c) => ({ name: c.name(), description: c.description() })), options, groupArgument });
    for (const sub of subs) visit(sub, [...path, sub.name()], [...inherited, ...own]);
  };
  visit(program, [], []);
  return out;
}

/** Every option that takes a value, once, by flag: the same flag means the same thing everywhere. */
function valueOptions(all: readonly Node[]): Map<string, { flags: string[]; value: ValueKind }> {
  const byLong = new Map<string, { flags: string[]; value: ValueKind }>();
  for (const n of all) {
    for (const o of n.options) {
      if (!o.value || byLong.has(o.long)) continue;
      byLong.set(o.long, { flags: o.short ? [o.short, o.long] : [o.long], value: o.value });
    }
  }
  return byLong;
}

function bashScript(program: Command): string {
  const all = nodes(program);
  const cases = all.map((n) => `    "${n.path}") words="${[...n.subcommands.map((s) => s.name), ...n.options.map((o) => o.long)].join(" ")}" ;;`).join("\n");
  const valueCases = [...valueOptions(all).values()]
    .map(({ flags, value }) => {
      const pattern = flags.join("|");
      switch (value.kind) {
        case "choices":
          return `    ${pattern}) COMPREPLY=($(compgen -W "${value.values.join(" ")}" -- "$cur")); return ;;`;
        case "group":
          return `    ${pattern}) _trellis_groups; return ;;`;
        case "file":
          return `    ${pattern}) COMPREPLY=($(compgen -f -- "$cur")); return ;;`;
        default:
          return `    ${pattern}) return ;;`;
      }
    })
    .join("\n");
  const groupArgs = all
    .filter((n) => n.groupArgument)
    .map((n) => `"${n.path}"`)
    .join("|");
  return `# bash completion for trellis (generated by \`trellis completion bash\`)
_trellis_groups() {
  # Group names may hold spaces: one candidate per line.
  local IFS=$'\\n'
  COMPREPLY=($(compgen -W "$("\${COMP_WORDS[0]}" __complete groups 2>/dev/null)" -- "$cur"))
}
_trellis() {
  local cur prev cmdpath="" w i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev=""
  ((COMP_CWORD > 0)) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # The value of an option that takes one.
  case "$prev" in
${valueCases}
  esac
  # The command path is the leading words that are not options.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    case "\${cmdpath:+$cmdpath }$w" in
${all
  .filter((n) => n.path)
  .map((n) => `      "${n.path}") cmdpath="${n.path}" ;;`)
  .join("\n")}
    esac
  done
${groupArgs ? `  case "$cmdpath" in\n    ${groupArgs}) [[ "$cur" != -* ]] && { _trellis_groups; return; } ;;\n  esac\n` : ""}  local words=""
  case "$cmdpath" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _trellis trellis
`;
}

function zshScript(program: Command): string {
  const esc = (s: string) => s.replace(/'/g, "'\\''").replace(/:/g, "\\:");
  const all = nodes(program);
  const cases = all
    .map((n) => {
      const subs = n.subcommands.map((s) => `'${esc(s.name)}:${esc(s.description)}'`).join(" ");
      const opts = n.options.map((o) => `'${esc(o.long)}:${esc(o.description)}'`).join(" ");
      return `    "${n.path}") subs=(${subs}); opts=(${opts}) ;;`;
    })
    .join("\n");
  const valueCases = [...valueOptions(all).values()]
    .map(({ flags, value }) => {
      const pattern = flags.join("|");
      switch (value.kind) {
        case "choices":
          return `    ${pattern}) compadd -- ${value.values.join(" ")}; return ;;`;
        case "group":
          return `    ${pattern}) _trellis_groups; return ;;`;
        case "file":
          return `    ${pattern}) _files; return ;;`;
        default:
          return `    ${pattern}) return ;;`;
      }
    })
    .join("\n");
  const groupArgs = all
    .filter((n) => n.groupArgument)
    .map((n) => `"${n.path}"`)
    .join("|");
  return `#compdef trellis
# zsh completion for trellis (generated by \`trellis completion zsh\`)
_trellis_groups() {
  local -a names
  names=(\${(f)"$(\${words[1]} __complete groups 2>/dev/null)"})
  compadd -a names
}
_trellis() {
  local cmdpath="" w i
  local -a subs opts
  # The value of an option that takes one.
  case "\${words[CURRENT-1]}" in
${valueCases}
  esac
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    [[ "$w" == -* ]] && continue
    case "\${cmdpath:+$cmdpath }$w" in
${all
  .filter((n) => n.path)
  .map((n) => `      "${n.path}") cmdpath="${n.path}" ;;`)
  .join("\n")}
    esac
  done
${groupArgs ? `  case "$cmdpath" in\n    ${groupArgs}) [[ "\${words[CURRENT]}" != -* ]] && { _trellis_groups; return; } ;;\n  esac\n` : ""}  case "$cmdpath" in
${cases}
  esac
  if [[ "\${words[CURRENT]}" == -* ]]; then
    _describe -t options 'option' opts
  else
    _describe -t commands 'command' subs || _files
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _trellis "$@"
else
  compdef _trellis trellis
fi
`;
}

function fishScript(program: Command): string {
  const q = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  const all = nodes(program);
  const paths = all.filter((n) => n.path).map((n) => q(n.path));
  const lines: string[] = [
    "# fish completion for trellis (generated by `trellis completion fish`)",
    `set -g __trellis_paths ${paths.join(" ")}`,
    "function __trellis_path",
    "    # The command path: the words so far that extend a known path (options and values skipped).",
    "    set -l words (commandline -opc)",
    "    set -e words[1]",
    "    set -l path ''",
    "    for w in $words",
    "        string match -q -- '-*' $w; and continue",
    '        set -l candidate (string trim -- "$path $w")',
    "        contains -- $candidate $__trellis_paths; and set path $candidate",
    "    end",
    "    echo $path",
    "end",
    "function __trellis_at",
    '    test (__trellis_path) = "$argv[1]"',
    "end",
    "function __trellis_groups",
    "    set -l cmd (commandline -opc)",
    "    $cmd[1] __complete groups 2>/dev/null",
    "end",
    "complete -c trellis -f",
  ];
  for (const n of all) {
    // Command paths are lowercase words and dashes: safe inside the double quotes.
    const cond = `-n '__trellis_at "${n.path}"'`;
    for (const s of n.subcommands) lines.push(`complete -c trellis ${cond} -a ${q(s.name)} -d ${q(s.description)}`);
    for (const o of n.options) {
      const flag = `-l ${o.long.slice(2)}${o.short ? ` -s ${o.short.slice(1)}` : ""}`;
      const v = o.value;
      const value =
        v === undefined
          ? ""
          : v.kind === "choices"
            ? ` -x -a ${q(v.values.join(" "))}`
            : v.kind === "group"
              ? ` -x -a '(__trellis_groups)'`
              : v.kind === "file"
                ? " -r -F"
                : " -x";
      lines.push(`complete -c trellis ${cond} ${flag}${value} -d ${q(o.description)}`);
    }
    if (n.groupArgument) lines.push(`complete -c trellis ${cond} -a '(__trellis_groups)'`);
  }
  return `${lines.join("\n")}\n`;
}
