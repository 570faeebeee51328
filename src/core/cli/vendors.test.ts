import { describe, expect, it } from "vitest";
import { cliArgv as argvFromArgvModule } from "./argv.js";
import type { Vendor } from "./routing.js";
import {
  announcedSessionId,
  cliArgv,
  conversationStateDir,
  parseJsonLine,
  terminalVerdict,
  VENDOR_ADAPTERS,
} from "./vendors.js";

const j = (v: unknown) => JSON.stringify(v);

describe("terminalVerdict (docs/supervisor.md#terminal-lines-and-exit-codes)", () => {
  it.each<[Vendor, string, boolean | undefined]>([
    ["claude", j({ type: "result", subtype: "success", is_error: false }), true],
    ["claude", j({ type: "result", subtype: "success" }), true],
    ["claude", j({ type: "result", subtype: "success", is_error: true }), false],
    ["claude", j({ type: "result", subtype: "error_max_turns", is_error: true }), false],
    // Only the boolean true is an error; a string "true" is not.
    ["claude", j({ type: "result", is_error: "true" }), true],
    ["claude", j({ type: "assistant", message: { content: [] } }), undefined],
    ["claude", j({ type: "system", subtype: "init", session_id: "s" }), undefined],
    ["exec", j({ type: "result", is_error: false }), true],
    ["exec", j({ type: "result", is_error: true }), false],
    ["codex", j({ type: "turn.completed", usage: {} }), true],
    ["codex", j({ type: "turn.failed", error: { message: "boom" } }), false],
    ["codex", j({ type: "error", message: "Reconnecting... 1/5" }), undefined],
    ["codex", j({ type: "result", is_error: false }), undefined],
    ["gemini", j({ type: "result", status: "success", stats: {} }), true],
    ["gemini", j({ type: "result", status: "error", error: { type: "X", message: "m" } }), false],
    ["gemini", j({ type: "result" }), false],
    ["gemini", j({ type: "message", role: "assistant", content: "hi" }), undefined],
    ["opencode", j({ type: "result", is_error: false }), undefined],
    ["claude", "not json", undefined],
    ["claude", '"result"', undefined],
    ["claude", "", undefined],
  ])("%s %s → %s", (vendor, line, want) => {
    const verdict = terminalVerdict(vendor, line);
    expect(verdict === undefined ? undefined : verdict.success).toBe(want);
  });
});

describe("announcedSessionId (docs/decisions.md D-53)", () => {
  it.each<[Vendor, string, string | undefined]>([
    ["claude", j({ type: "system", subtype: "init", session_id: "c-1" }), "c-1"],
    ["claude", j({ type: "result", is_error: false, session_id: "c-2" }), "c-2"],
    ["claude", j({ type: "assistant", session_id: "c-3" }), undefined],
    ["claude", j({ type: "system", subtype: "status", session_id: "c-4" }), undefined],
    ["claude", j({ type: "result", session_id: "" }), undefined],
    ["codex", j({ type: "thread.started", thread_id: "t-1" }), "t-1"],
    ["codex", j({ type: "turn.started", thread_id: "t-2" }), undefined],
    ["gemini", j({ type: "init", session_id: "g-1", model: "gemini-3" }), "g-1"],
    ["gemini", j({ type: "result", session_id: "g-2" }), undefined],
    ["opencode", j({ type: "system", subtype: "init", session_id: "o-1" }), undefined],
    ["exec", j({ type: "result", session_id: "e-1" }), undefined],
  ])("%s %s → %s", (vendor, line, want) => {
    expect(announcedSessionId(vendor, line)).toBe(want);
    const parsed = parseJsonLine(line);
    if (parsed) expect(announcedSessionId(vendor, parsed)).toBe(want);
  });
});

describe("conversationStateDir", () => {
  it.each<[Vendor, string | undefined]>([
    ["claude", ".claude"],
    ["codex", ".codex"],
    ["gemini", ".gemini"],
    ["opencode", undefined],
    ["exec", undefined],
  ])("%s → %s", (vendor, want) => {
    expect(conversationStateDir(vendor)).toBe(want);
  });
});

describe("parseJsonLine", () => {
  it.each([
    ['{"a":1}', { a: 1 }],
    ['  {"a":1}\r', { a: 1 }],
    ["[1,2]", undefined],
    ["null", undefined],
    ["{broken", undefined],
    ["plain text", undefined],
  ])("%j → %j", (line, want) => {
    expect(parseJsonLine(line)).toEqual(want);
  });
});

describe("the argv entry point", () => {
  it("is the argv module's builder, so controller and pod build the same argv", () => {
    expect(cliArgv).toBe(argvFromArgvModule);
    expect(cliArgv({ permission_mode: "bypass" } as never, "gpt-5-codex", "do it")).toEqual([
      "codex",
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--model",
      "gpt-5-codex",
      "--dangerously-bypass-approvals-and-sandbox",
      "--",
      "do it",
    ]);
  });
  it("has an adapter for every vendor", () => {
    expect(Object.keys(VENDOR_ADAPTERS).sort()).toEqual(["claude", "codex", "exec", "gemini", "opencode"]);
  });
});
