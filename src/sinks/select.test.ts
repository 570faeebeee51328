import { describe, expect, it } from "vitest";
import type { Vendor } from "../core/cli/routing.js";
import type { OutputSelector } from "../core/types.js";
import { type Classification, classifyLine, passesSelect } from "./select.js";

const j = (v: unknown) => JSON.stringify(v);

const claudeToolUse = j({
  type: "assistant",
  message: {
    content: [
      { type: "text", text: "let me look" },
      { type: "tool_use", name: "Bash", input: {} },
      { type: "tool_result", content: "ignored" },
    ],
  },
});
const claudeToolResult = j({
  type: "user",
  message: { content: [{ type: "tool_result", content: "file.txt" }] },
});
const claudeToolResultBlocks = j({
  type: "user",
  message: { content: [{ type: "tool_result", content: [{ type: "text", text: "x" }] }] },
});
const claudeAssistant = j({
  type: "assistant",
  message: {
    content: [
      { type: "thinking", thinking: "hmm" },
      { type: "text", text: "Hello " },
      { type: "text", text: "world" },
    ],
  },
});
const claudeUserString = j({ type: "user", message: { content: "do it" } });
const claudeResult = j({ type: "result", is_error: false, result: "The answer is 42", session_id: "s" });
const claudeInit = j({ type: "system", subtype: "init", session_id: "s" });
const claudeTokens = j({ type: "system", subtype: "token_usage" });

const codexMsg = j({
  type: "item.completed",
  item: { id: "item_0", type: "agent_message", text: "done here" },
});
const codexCmd = j({ type: "item.completed", item: { type: "command_execution", command: "ls -la" } });
const codexMcp = j({ type: "item.completed", item: { type: "mcp_tool_call", tool: "search" } });
const codexFile = j({ type: "item.completed", item: { type: "file_change" } });
const codexWeb = j({ type: "item.completed", item: { type: "web_search" } });
const codexReasoning = j({ type: "item.completed", item: { type: "reasoning", text: "x" } });
const codexTurn = j({ type: "turn.completed", usage: { input_tokens: 1 } });
const codexStarted = j({ type: "thread.started", thread_id: "t" });
const codexItemStarted = j({ type: "item.started", item: { type: "agent_message", text: "x" } });

const gemMsg = j({ type: "message", role: "assistant", content: '{"severity":"high"}', delta: true });
const gemUser = j({ type: "message", role: "user", content: "prompt" });
const gemTool = j({ type: "tool_use", tool_name: "read_file" });
const gemToolResult = j({ type: "tool_result", output: "contents" });
const gemResult = j({ type: "result", status: "success", stats: {} });
const gemInit = j({ type: "init", session_id: "s", model: "m" });

describe("classifyLine", () => {
  const table: Array<[Vendor, string, Classification | undefined]> = [
    ["claude", claudeToolUse, { class: "tool_call", tool: "Bash" }],
    ["claude", claudeToolResult, { class: "tool_result", text: "file.txt" }],
    ["claude", claudeToolResultBlocks, { class: "tool_result", text: undefined }],
    ["claude", claudeAssistant, { class: "message", text: "Hello world", role: "assistant" }],
    ["claude", claudeUserString, { class: "message", text: "do it", role: "user" }],
    ["claude", claudeResult, { class: "result", text: "The answer is 42" }],
    ["claude", claudeInit, undefined],
    ["claude", claudeTokens, { class: "usage" }],
    ["claude", "not json", undefined],
    ["claude", "[1,2]", undefined],
    // opencode prints no Claude-style lines (its own are in select-opencode.test.ts).
    ["opencode", claudeResult, undefined],
    ["exec", claudeResult, { class: "result", text: "The answer is 42" }],
    ["exec", claudeAssistant, { class: "message", text: "Hello world", role: "assistant" }],
    ["codex", codexMsg, { class: "message", text: "done here", role: "assistant" }],
    ["codex", codexCmd, { class: "tool_call", text: "ls -la" }],
    ["codex", codexMcp, { class: "tool_call", tool: "search" }],
    ["codex", codexFile, { class: "tool_call" }],
    ["codex", codexWeb, { class: "tool_call" }],
    ["codex", codexReasoning, undefined],
    ["codex", codexTurn, { class: "usage" }],
    ["codex", codexStarted, undefined],
    ["codex", codexItemStarted, undefined],
    ["codex", claudeResult, undefined],
    ["gemini", gemMsg, { class: "message", text: '{"severity":"high"}', role: "assistant" }],
    ["gemini", gemUser, { class: "message", text: "prompt", role: "user" }],
    ["gemini", gemTool, { class: "tool_call", tool: "read_file" }],
    ["gemini", gemToolResult, { class: "tool_result", text: "contents" }],
    ["gemini", gemResult, { class: "result" }],
    ["gemini", gemInit, undefined],
    ["gemini", j({ type: "error", message: "x" }), undefined],
  ];
  it.each(table)("%s %s", (vendor, line, expected) => {
    const got = classifyLine(vendor, line);
    if (expected === undefined) expect(got).toBeUndefined();
    else expect(got).toEqual(expected);
  });
});

describe("passesSelect", () => {
  const table: Array<[string, OutputSelector[] | undefined, Vendor, string, boolean]> = [
    ["absent select passes everything", undefined, "claude", claudeInit, true],
    ["empty select passes non-JSON", [], "claude", "plain text", true],
    ["non-JSON dropped once select is set", [{ event: "result" }], "claude", "plain text", false],
    ["unclassified dropped", [{ event: "result" }], "claude", claudeInit, false],
    ["event match", [{ event: "result" }], "claude", claudeResult, true],
    ["event mismatch", [{ event: "message" }], "claude", claudeResult, false],
    ["any selector matches", [{ event: "message" }, { event: "result" }], "claude", claudeResult, true],
    ["tool exact", [{ event: "tool_call", tool: "Bash" }], "claude", claudeToolUse, true],
    ["tool is case-sensitive", [{ event: "tool_call", tool: "bash" }], "claude", claudeToolUse, false],
    ["tool set, line has none", [{ event: "tool_call", tool: "ls" }], "codex", codexCmd, false],
    ["contains substring", [{ event: "result", contains: "answer" }], "claude", claudeResult, true],
    ["contains case-sensitive", [{ event: "result", contains: "Answer" }], "claude", claudeResult, false],
    ["contains on a line without text", [{ event: "result", contains: "x" }], "gemini", gemResult, false],
    ["contains on codex command", [{ event: "tool_call", contains: "-la" }], "codex", codexCmd, true],
    ["empty contains is no constraint", [{ event: "result", contains: "" }], "gemini", gemResult, true],
    [
      "role assistant on assistant",
      [{ event: "message", role: "assistant" }],
      "claude",
      claudeAssistant,
      true,
    ],
    ["role user on assistant", [{ event: "message", role: "user" }], "claude", claudeAssistant, false],
    ["role user on user", [{ event: "message", role: "user" }], "claude", claudeUserString, true],
    ["codex agent_message is assistant", [{ event: "message", role: "assistant" }], "codex", codexMsg, true],
    ["codex agent_message not user", [{ event: "message", role: "user" }], "codex", codexMsg, false],
    ["gemini role from the line", [{ event: "message", role: "user" }], "gemini", gemUser, true],
    ["gemini role mismatch", [{ event: "message", role: "user" }], "gemini", gemMsg, false],
    ["usage on codex turn.completed", [{ event: "usage" }], "codex", codexTurn, true],
    [
      "all constraints together",
      [{ event: "message", role: "assistant", contains: "world" }],
      "claude",
      claudeAssistant,
      true,
    ],
  ];
  it.each(table)("%s", (_name, selectors, vendor, line, expected) => {
    expect(passesSelect(selectors, vendor, line)).toBe(expected);
  });
});
