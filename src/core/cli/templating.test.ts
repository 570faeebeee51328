import { describe, expect, it } from "vitest";
import { renderPrompt } from "./templating.js";

describe("renderPrompt (docs/templating-and-routing.md#templating)", () => {
  it.each([
    ["Fix {ticket}.", { ticket: "ENG-1" }, "Fix ENG-1.", "basic substitution"],
    ["Fix {ticket}.", {}, "Fix {ticket}.", "unknown name kept"],
    ["{repo}@{repo}", { repo: "api" }, "api@api", "every occurrence filled"],
    ["{svc.name}/{svc-id}/{v_2}", { "svc.name": "a", "svc-id": "b", v_2: "c" }, "a/b/c", "name characters"],
    ["{Ticket}", { ticket: "x" }, "{Ticket}", "case-sensitive"],
    ["{ ticket }", { ticket: "x" }, "{ ticket }", "spaces end the name"],
    ["{}", { "": "x" }, "{}", "empty name"],
    ["{{ticket}}", { ticket: "x" }, "{x}", "outer braces are text"],
    ["{a}", { a: "{b}", b: "z" }, "{b}", "values not re-expanded"],
    ["x{a", { a: "1" }, "x{a", "unclosed brace"],
    ["[{a}]", { a: "" }, "[]", "empty value replaces"],
    ["{a}{b}", { a: "1", b: "2" }, "12", "adjacent tokens"],
    ["{é}", { é: "x" }, "{é}", "non-ASCII name"],
    ["{a/b}", { "a/b": "x" }, "{a/b}", "slash in name"],
    ["", { a: "b" }, "", "empty template"],
    ["{toString}", {}, "{toString}", "prototype names are not parameters"],
  ] as [string, Record<string, string>, string, string][])(
    "%j with %j → %j (%s)",
    (template, params, want) => {
      expect(renderPrompt(template, params)).toBe(want);
    },
  );
  it("renders an absent template as empty", () => {
    expect(renderPrompt(undefined, { a: "b" })).toBe("");
  });
});
