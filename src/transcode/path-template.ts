/**
 * google.api.http path templates, the grammar of google/api/http.proto:
 *
 *   Template  = "/" Segments [ Verb ] ;
 *   Segments  = Segment { "/" Segment } ;
 *   Segment   = "*" | "**" | LITERAL | Variable ;
 *   Variable  = "{" FieldPath [ "=" Segments ] "}" ;
 *   FieldPath = IDENT { "." IDENT } ;
 *   Verb      = ":" LITERAL ;
 *
 * `{x}` means `{x=*}`; a variable may not contain another. The template is flattened into a
 * list of parts (one per path segment), each remembering the variable it belongs to, which is
 * what the route table compiles into its trie.
 *
 * Where we are stricter or looser than the text, on purpose:
 * - http.proto allows `**` only as the last segment. The published API puts literals after it
 *   (`/repos/{uid=**}/readme`), so we accept `**` anywhere but at most once per template;
 *   the route table gives literals after it precedence.
 * - LITERAL is left undefined by http.proto. We accept RFC 3986 unreserved and sub-delim
 *   characters, `@` and percent-escapes (decoded for matching, as the spec asks templates to
 *   encode reserved characters); never `:` (it starts the verb), `*`, `{`, `}`, `?` or `#`.
 *   A verb may itself contain `:` (grpc-gateway PRs #1947, #2727).
 * - A field path segment is a proto identifier; the same field may not be bound twice.
 */

/** A literal segment, `*` (exactly one segment) or `**` (zero or more segments). */
export type PartKind = "literal" | "star" | "dstar";

/** One path segment of a template. */
export interface Part {
  readonly kind: PartKind;
  /** The literal text, percent-decoded (kind "literal" only). */
  readonly value?: string;
  /** Index into `PathTemplate.variables` when the part lies inside a variable. */
  readonly variable?: number;
}

/** One `{field.path=...}` variable. */
export interface TemplateVariable {
  /** The proto field names from the request message to the bound leaf. */
  readonly fieldPath: readonly string[];
  /** True when it may span several segments (`**`, or a pattern of more than one segment). */
  readonly multiSegment: boolean;
  /** Index of its first and last part in `PathTemplate.parts`. */
  readonly firstPart: number;
  readonly lastPart: number;
}

/** A parsed template; `source` is the text it came from. */
export interface PathTemplate {
  readonly source: string;
  readonly parts: readonly Part[];
  readonly variables: readonly TemplateVariable[];
  /** The custom verb without its ':', or undefined. */
  readonly verb: string | undefined;
}

const LITERAL = /^(?:[A-Za-z0-9\-._~!$&'()+,;=@]|%[0-9A-Fa-f]{2})+$/;
const VERB = /^[A-Za-z0-9\-._~!$&'()+,;=@:]+$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses a template. Pure; called once per rule at start-up.
 * @throws Error `invalid path template "<source>": <why>` on anything outside the grammar.
 */
export function parsePathTemplate(source: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`invalid path template ${JSON.stringify(source)}: ${why}`);
  };
  const parts: Part[] = [];
  const variables: TemplateVariable[] = [];
  let i = 0;
  let verb: string | undefined;

  const segments = (variable: number | undefined): void => {
    for (;;) {
      segment(variable);
      if (source[i] !== "/") return;
      i++;
    }
  };
  const segment = (variable: number | undefined): void => {
    if (source.startsWith("**", i)) {
      parts.push({ kind: "dstar", variable });
      i += 2;
    } else if (source[i] === "*") {
      parts.push({ kind: "star", variable });
      i += 1;
    } else if (source[i] === "{") {
      if (variable !== undefined) fail("a variable may not contain another variable");
      parseVariable();
    } else {
      const start = i;
      while (i < source.length && !"/{}:*".includes(source[i] as string)) i++;
      const text = source.slice(start, i);
      if (text === "") fail(`empty segment at offset ${start}`);
      if (!LITERAL.test(text)) fail(`invalid literal segment ${JSON.stringify(text)}`);
      parts.push({ kind: "literal", value: decodeURIComponent(text), variable });
    }
    const next = source[i];
    if (next !== undefined && next !== "/" && next !== ":" && !(next === "}" && variable !== undefined)) {
      fail(`unexpected ${JSON.stringify(next)} at offset ${i}`);
    }
  };
  const parseVariable = (): void => {
    const open = i++;
    const end = source.indexOf("}", i);
    if (end < 0) fail(`unclosed variable at offset ${open}`);
    const eq = source.indexOf("=", i);
    const pathEnd = eq >= 0 && eq < end ? eq : end;
    const fieldPath = source.slice(i, pathEnd).split(".");
    if (!fieldPath.every((s) => IDENT.test(s))) fail(`invalid field path ${JSON.stringify(source.slice(i, pathEnd))}`);
    const dotted = fieldPath.join(".");
    if (variables.some((v) => v.fieldPath.join(".") === dotted)) fail(`field ${dotted} is bound twice`);
    const index = variables.length;
    const firstPart = parts.length;
    // Reserve the slot so parts can refer to it; filled in below.
    variables.push({ fieldPath, multiSegment: false, firstPart, lastPart: firstPart });
    if (pathEnd === end) {
      parts.push({ kind: "star", variable: index });
      i = end;
    } else {
      i = eq + 1;
      if (source[i] === "}") fail(`variable ${dotted} has an empty pattern`);
      segments(index);
      if (source[i] !== "}") fail(`unclosed variable ${dotted}`);
    }
    i++; // the '}'
    const mine = parts.slice(firstPart);
    variables[index] = {
      fieldPath,
      multiSegment: mine.length > 1 || mine.some((p) => p.kind === "dstar"),
      firstPart,
      lastPart: parts.length - 1,
    };
  };

  if (source[0] !== "/") fail("must start with '/'");
  i = 1;
  segments(undefined);
  if (source[i] === ":") {
    verb = source.slice(i + 1);
    if (verb === "") fail("empty verb");
    if (!VERB.test(verb)) fail(`invalid verb ${JSON.stringify(verb)} (a verb ends the template)`);
    i = source.length;
  }
  if (i !== source.length) fail(`unexpected ${JSON.stringify(source[i])} at offset ${i}`);
  if (parts.filter((p) => p.kind === "dstar").length > 1) fail("'**' may appear at most once");
  return { source, parts, variables, verb };
}
