/**
 * google.api.http path templates (google/api/http.proto grammar):
 *
 *   Template = "/" Segments [ Verb ] ;
 *   Segments = Segment { "/" Segment } ;
 *   Segment  = "*" | "**" | LITERAL | Variable ;
 *   Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *   FieldPath = IDENT { "." IDENT } ;
 *   Verb     = ":" LITERAL ;
 *
 * `{x}` means `{x=*}`. A variable may not contain another. Parsed once at start-up into a
 * flat list of parts, each remembering which variable (if any) it belongs to.
 */

export type PartKind = "literal" | "star" | "dstar";

export interface Part {
  readonly kind: PartKind;
  /** Literal text (for kind "literal"). */
  readonly value?: string;
  /** Index into `variables` when the part is inside a variable. */
  readonly variable?: number;
}

export interface PathTemplate {
  readonly source: string;
  readonly parts: readonly Part[];
  /** Variables by index: dotted proto field path, and whether it spans several segments. */
  readonly variables: readonly { readonly fieldPath: readonly string[]; readonly multiSegment: boolean }[];
  readonly verb: string | undefined;
}

/** @throws Error naming the template and the problem. */
export function parsePathTemplate(source: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`invalid path template ${JSON.stringify(source)}: ${why}`);
  };
  if (!source.startsWith("/")) fail("must start with '/'");
  let body = source.slice(1);
  let verb: string | undefined;
  // The verb is a ':' after the last '/' that is not inside a variable.
  const lastSlash = body.lastIndexOf("/");
  const lastBrace = body.lastIndexOf("}");
  const colon = body.indexOf(":", Math.max(lastSlash, lastBrace) + 1);
  if (colon >= 0) {
    verb = body.slice(colon + 1);
    body = body.slice(0, colon);
    if (!/^[A-Za-z0-9_.-]+$/.test(verb)) fail("bad verb");
  }
  const parts: Part[] = [];
  const variables: { fieldPath: string[]; multiSegment: boolean }[] = [];
  let i = 0;
  const segmentsIn = (text: string, variable: number | undefined) => {
    if (text === "") fail("empty segment");
    for (const seg of text.split("/")) {
      if (seg === "") fail("empty segment");
      if (seg === "*") parts.push({ kind: "star", variable });
      else if (seg === "**") parts.push({ kind: "dstar", variable });
      else if (/^[A-Za-z0-9_.~-]+$/.test(seg)) parts.push({ kind: "literal", value: seg, variable });
      else fail(`bad segment ${JSON.stringify(seg)}`);
    }
  };
  while (i < body.length) {
    if (body[i] === "{") {
      const end = body.indexOf("}", i);
      if (end < 0) fail("unclosed variable");
      const inner = body.slice(i + 1, end);
      if (inner.includes("{")) fail("nested variable");
      const eq = inner.indexOf("=");
      const path = eq < 0 ? inner : inner.slice(0, eq);
      if (!/^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$/.test(path)) fail(`bad field path ${JSON.stringify(path)}`);
      const index = variables.length;
      const before = parts.length;
      segmentsIn(eq < 0 ? "*" : inner.slice(eq + 1), index);
      const mine = parts.slice(before);
      variables.push({ fieldPath: path.split("."), multiSegment: mine.length > 1 || mine.some((p) => p.kind === "dstar") });
      i = end + 1;
      if (i < body.length && body[i] !== "/") fail("a variable must end a segment");
      if (body[i] === "/") i++;
    } else {
      let end = body.indexOf("/", i);
      const brace = body.indexOf("{", i);
      if (brace >= 0 && (end < 0 || brace < end)) fail("a variable must start a segment");
      if (end < 0) end = body.length;
      segmentsIn(body.slice(i, end), undefined);
      i = end + 1;
    }
  }
  if (body.endsWith("/")) fail("trailing '/'");
  return { source, parts, variables, verb };
}
