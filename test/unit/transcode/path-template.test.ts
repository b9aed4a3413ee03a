/** parsePathTemplate: the http.proto grammar, with our two relaxations and the rejections. */
import { describe, expect, it } from "vitest";
import { type PathTemplate, parsePathTemplate } from "../../../src/transcode/path-template.js";

/** A compact picture of a template: parts (`name@var`), variables and verb. */
function shape(t: PathTemplate) {
  return {
    parts: t.parts.map((p) => {
      const text = p.kind === "literal" ? (p.value as string) : p.kind === "star" ? "*" : "**";
      return p.variable === undefined ? text : `${text}@${p.variable}`;
    }),
    variables: t.variables.map((v) => `${v.fieldPath.join(".")}${v.multiSegment ? "(multi)" : ""}[${v.firstPart}..${v.lastPart}]`),
    verb: t.verb,
  };
}

describe("parsePathTemplate accepts", () => {
  const cases: [string, ReturnType<typeof shape>][] = [
    ["/v1/items", { parts: ["v1", "items"], variables: [], verb: undefined }],
    ["/v1/items/{uid=**}", { parts: ["v1", "items", "**@0"], variables: ["uid(multi)[2..2]"], verb: undefined }],
    ["/v1/owners/{owner}/items/{uid}", { parts: ["v1", "owners", "*@0", "items", "*@1"], variables: ["owner[2..2]", "uid[4..4]"], verb: undefined }],
    ["/v1/{name=items/*}:archive", { parts: ["v1", "items@0", "*@0"], variables: ["name(multi)[1..2]"], verb: "archive" }],
    ["/v1/items/{item.uid=**}", { parts: ["v1", "items", "**@0"], variables: ["item.uid(multi)[2..2]"], verb: undefined }],
    ["/v1/items:count", { parts: ["v1", "items"], variables: [], verb: "count" }],
    ["/v1/items/{uid=**}:labels", { parts: ["v1", "items", "**@0"], variables: ["uid(multi)[2..2]"], verb: "labels" }],
    // `**` before a literal suffix: the published API needs it (/repos/{uid=**}/readme).
    ["/v1/items/{uid=**}/readme", { parts: ["v1", "items", "**@0", "readme"], variables: ["uid(multi)[2..2]"], verb: undefined }],
    ["/v1/*/x/**", { parts: ["v1", "*", "x", "**"], variables: [], verb: undefined }],
    ["/v1/a%2Fb", { parts: ["v1", "a/b"], variables: [], verb: undefined }],
    ["/v1/x:do:it", { parts: ["v1", "x"], variables: [], verb: "do:it" }],
    ["/v1/{a=x/y/*}/{b_2}", { parts: ["v1", "x@0", "y@0", "*@0", "*@1"], variables: ["a(multi)[1..3]", "b_2[4..4]"], verb: undefined }],
    ["/v1/{Camel_Case}", { parts: ["v1", "*@0"], variables: ["Camel_Case[1..1]"], verb: undefined }],
  ];
  for (const [source, want] of cases) {
    it(source, () => {
      const t = parsePathTemplate(source);
      expect(shape(t)).toEqual(want);
      expect(t.source).toBe(source);
    });
  }
});

describe("parsePathTemplate rejects", () => {
  const cases: [string, RegExp][] = [
    ["v1/items", /must start with '\/'/],
    ["/", /empty segment/],
    ["/v1//items", /empty segment/],
    ["/v1/items/", /empty segment/],
    ["/v1/{uid", /unclosed variable/],
    ["/v1/{a={b}}", /may not contain another variable/],
    ["/v1/{a.}", /invalid field path/],
    ["/v1/{1a}", /invalid field path/],
    ["/v1/{a}/{a}", /field a is bound twice/],
    ["/v1/{a=}", /empty pattern/],
    ["/v1/**/x/**", /'\*\*' may appear at most once/],
    ["/v1/***", /unexpected "\*"/],
    ["/v1/a*", /unexpected "\*"/],
    ["/v1/items:", /empty verb/],
    ["/v1/a:b/c", /invalid verb "b\/c"/],
    ["/v1/it ems", /invalid literal segment/],
    ["/v1/%zz", /invalid literal segment/],
    ["/v1/a?b", /invalid literal segment/],
    ["/v1/x}", /unexpected "}"/],
    ["/v1/{name=items/*:x}", /unclosed variable name/],
  ];
  for (const [source, message] of cases) {
    it(source, () => {
      expect(() => parsePathTemplate(source)).toThrow(message);
      expect(() => parsePathTemplate(source)).toThrow(`invalid path template ${JSON.stringify(source)}`);
    });
  }
});
