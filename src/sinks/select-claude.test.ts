/** `output.select` on claude's real lines (Claude Code 2.1.328, docs/events.md). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { OutputSelector } from "../core/types.js";
import { classifyLine, passesSelect } from "./select.js";

const FIXTURES = join(import.meta.dirname, "..", "..", "test", "fakes", "models", "fixtures", "claude");
const lines = (name: string): string[] =>
  readFileSync(join(FIXTURES, `${name}.jsonl`), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");

const select = (name: string, selectors: OutputSelector[]) =>
  lines(name).filter((l) => passesSelect(selectors, "claude", l));

describe("claude line classes", () => {
  it("classifies every line of a run that edits a file", () => {
    expect(lines("edit-and-bash").map((l) => classifyLine("claude", l))).toEqual([
      undefined,
      { class: "message", text: "Bumping the version.", role: "assistant" },
      { class: "tool_call", tool: "Edit" },
      { class: "tool_result", text: "The file /tmp/disc-wt/config.txt has been updated successfully." },
      { class: "tool_call", tool: "Bash" },
      { class: "tool_result", text: "version = 2" },
      { class: "message", text: "Version bumped to 2.", role: "assistant" },
      { class: "result", text: "Version bumped to 2." },
    ]);
  });

  it("a failed API call: the retry notices are unclassified, the CLI's message and the result carry its text", () => {
    expect(lines("api-401").map((l) => classifyLine("claude", l))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      { class: "message", text: "Invalid API key · Fix external API key", role: "assistant" },
      { class: "result", text: "Invalid API key · Fix external API key" },
    ]);
  });
});

describe("claude selectors", () => {
  it("{event: tool_call, tool: Edit} picks the edit; {event: result} the last line", () => {
    const edits = select("edit-and-bash", [{ event: "tool_call", tool: "Edit" }]);
    expect(edits.map((l) => JSON.parse(l).message.content[0].input)).toEqual([
      {
        replace_all: false,
        file_path: "/tmp/disc-wt/config.txt",
        old_string: "version = 1",
        new_string: "version = 2",
      },
    ]);
    const results = select("edit-and-bash", [{ event: "result" }]);
    expect(results.map((l) => JSON.parse(l).total_cost_usd)).toEqual([0.04424399999999999]);
  });

  it("{event: result, contains: ...} tells a failed run by the CLI's words", () => {
    expect(select("api-401", [{ event: "result", contains: "Invalid API key" }])).toHaveLength(1);
    expect(select("api-429", [{ event: "result", contains: "(429)" }])).toHaveLength(1);
    expect(select("text", [{ event: "result", contains: "Invalid API key" }])).toEqual([]);
  });

  it("{event: message, role: assistant} keeps the answers, not the init, tool or system lines", () => {
    expect(
      select("stream-cut-retried", [{ event: "message", role: "assistant" }]).map(
        (l) => JSON.parse(l).message.content[0].text,
      ),
    ).toEqual(["after cut"]);
  });
});
