/** `output.select` on opencode's real lines (opencode-ai 1.18.33, docs/events.md). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { OutputSelector } from "../core/types.js";
import { classifyLine, passesSelect } from "./select.js";

const FIXTURES = join(import.meta.dirname, "..", "..", "test", "fakes", "models", "fixtures", "opencode");
const lines = (name: string): string[] =>
  readFileSync(join(FIXTURES, `${name}.jsonl`), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");

const types = (selected: string[]) => selected.map((l) => JSON.parse(l).type);

describe("opencode line classes", () => {
  it("classifies every line of a run that edits a file", () => {
    expect(lines("edit-anthropic").map((l) => classifyLine("opencode", l))).toEqual([
      undefined,
      { class: "message", text: "Writing.", role: "assistant" },
      { class: "tool_call", tool: "write", text: '{"filePath":"hello.txt","content":"hi\\n"}' },
      { class: "usage" },
      undefined,
      { class: "message", text: "Wrote it.", role: "assistant" },
      { class: "result" },
    ]);
  });

  it("an error line is the run's result, its text the provider's answer", () => {
    expect(lines("api-401").map((l) => classifyLine("opencode", l))).toEqual([
      { class: "result", text: "invalid x-api-key (HTTP 401)" },
    ]);
  });
});

describe("selecting opencode lines", () => {
  const select = (selectors: OutputSelector[], name = "edit-anthropic") =>
    lines(name).filter((l) => passesSelect(selectors, "opencode", l));

  it.each<[string, OutputSelector[], string[]]>([
    ["result: the last step", [{ event: "result" }], ["step_finish"]],
    ["usage: the other steps", [{ event: "usage" }], ["step_finish"]],
    ["assistant messages", [{ event: "message", role: "assistant" }], ["text", "text"]],
    ["a message by its text", [{ event: "message", contains: "Wrote" }], ["text"]],
    ["a tool by its name", [{ event: "tool_call", tool: "write" }], ["tool_use"]],
    ["a tool call by its input", [{ event: "tool_call", contains: "hello.txt" }], ["tool_use"]],
    ["another tool", [{ event: "tool_call", tool: "bash" }], []],
    ["several selectors", [{ event: "tool_call" }, { event: "result" }], ["tool_use", "step_finish"]],
  ])("%s", (_name, selectors, want) => {
    expect(types(select(selectors))).toEqual(want);
  });

  it("the failure's result carries what the provider answered", () => {
    expect(types(select([{ event: "result", contains: "HTTP 401" }], "api-401"))).toEqual(["error"]);
  });
});
