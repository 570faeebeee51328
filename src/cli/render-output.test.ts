/** Rendering per vendor, on the lines recorded in docs/agent-clis.md. */
import { describe, expect, it } from "vitest";
import { runUsage } from "../core/pricing/run-usage.js";
import { detectVendor, renderOutput, vendorFor } from "./render-output.js";

const claude = [
  '{"type":"system","subtype":"init","cwd":"/home/user/project","session_id":"4855a4a8-c43d-426f-99fc-150c8ea32853","tools":["Task","Bash","Read","Edit"],"model":"claude-sonnet-4-6","permissionMode":"default"}',
  '{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"I will run the tests."}]},"parent_tool_use_id":null,"session_id":"4855a4a8"}',
  '{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"npm test","description":"Run tests"}}]},"session_id":"4855a4a8"}',
  '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"12 passed\\n0 failed","is_error":false}]},"session_id":"4855a4a8"}',
  '{"type":"assistant","message":{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"The login page fails because the session cookie is dropped."}]},"session_id":"4855a4a8"}',
  '{"type":"result","subtype":"success","is_error":false,"duration_ms":3000,"duration_api_ms":2000,"num_turns":1,"result":"The login page fails because the session cookie is dropped.","stop_reason":"end_turn","session_id":"4855a4a8","total_cost_usd":0.0106,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":20012,"output_tokens":24}}',
];

const codex = [
  '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
  '{"type":"turn.started"}',
  '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Searching for README files**"}}',
  '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
  '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"README.md","exit_code":0,"status":"completed"}}',
  '{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"docs/a.md","kind":"add"}],"status":"completed"}}',
  '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Yep — there\'s a `README.md` in the repository root."}}',
  '{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}',
];

const gemini = [
  '{"type":"init","timestamp":"2026-11-30T10:00:00.000Z","session_id":"test-session-id","model":"gemini-3.1-flash-lite"}',
  '{"type":"message","timestamp":"2026-11-30T10:00:00.001Z","role":"user","content":"Stream test"}',
  '{"type":"tool_use","timestamp":"2026-11-30T10:00:00.002Z","tool_name":"read_file","tool_id":"t1","parameters":{"file_path":"README.md"}}',
  '{"type":"tool_result","timestamp":"2026-11-30T10:00:00.003Z","tool_id":"t1","status":"success","output":"# Project"}',
  '{"type":"message","timestamp":"2026-11-30T10:00:00.004Z","role":"assistant","content":"Final ","delta":true}',
  '{"type":"message","timestamp":"2026-11-30T10:00:00.005Z","role":"assistant","content":"answer","delta":true}',
  '{"type":"result","timestamp":"2026-11-30T10:00:01.000Z","status":"success","stats":{"total_tokens":61,"input_tokens":48,"output_tokens":13,"cached":0,"input":48,"duration_ms":1234,"tool_calls":1,"models":{}}}',
];

describe("renderOutput", () => {
  it("claude: session, text, tool call and result, thinking left out, result with cost", () => {
    expect(renderOutput(claude.join("\n"), "claude")).toEqual([
      "[session] 4855a4a8-c43d-426f-99fc-150c8ea32853 · claude-sonnet-4-6",
      "I will run the tests.",
      "[tool] Bash · npm test",
      "[tool result] 12 passed…",
      "The login page fails because the session cookie is dropped.",
      "[result] success · cost $0.0106 · 1 turn · 3.0 s",
    ]);
  });

  it.each(["claude", "codex", "gemini", "opencode"] as const)(
    "%s: the supervisor's wait for a limited provider is a line of its own",
    (vendor) => {
      const wait =
        '{"kind":"provider-limit","provider":"anthropic","status":429,"retry":1,"waitSeconds":2,"retryAfterSeconds":2,"at":"2026-01-01T00:00:00.000Z","reason":"rate_limited","message":"slow down"}';
      const drop =
        '{"kind":"provider-limit","provider":"openai","status":0,"retry":2,"waitSeconds":9,"at":"2026-01-01T00:00:05.000Z","reason":"connection","message":""}';
      expect(renderOutput(`${wait}\n${drop}`, vendor)).toEqual([
        "[provider limit] anthropic answered 429 (rate_limited) · retry 1 in 2 s (as it asked) · slow down",
        "[provider limit] openai gave no answer (connection) · retry 2 in 9 s",
      ]);
    },
  );

  it("claude: a failed API call is a failed result with the error text", () => {
    const line =
      '{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"duration_ms":10,"num_turns":1,"result":"API Error: 529 Overloaded","total_cost_usd":0}';
    expect(renderOutput(line, "claude")).toEqual([
      "[result] failed (API 529) · cost $0.0000 · 1 turn · 0.0 s",
      "[error] API Error: 529 Overloaded",
    ]);
  });

  it("codex: session, shell command with exit code, file change, answer, tokens (no cost)", () => {
    expect(renderOutput(codex.join("\n"), "codex")).toEqual([
      "[session] 0199a213-81c0-7800-8aa1-bbab2a035a53",
      "[tool] shell · bash -lc ls · exit 0",
      "[tool] edit · add docs/a.md",
      "Yep — there's a `README.md` in the repository root.",
      "[result] success · 24763 in / 122 out tokens · 24448 cached",
    ]);
  });

  it("codex: a failed turn", () => {
    const lines = [
      '{"type":"error","message":"stream disconnected before completion: Incomplete response returned, reason: max_output_tokens"}',
      '{"type":"turn.failed","error":{"message":"stream disconnected before completion: Incomplete response returned, reason: max_output_tokens"}}',
    ];
    expect(renderOutput(lines.join("\n"), "codex")).toEqual([
      "[error] stream disconnected before completion: Incomplete response returned, reason: max_output_tokens",
      "[result] failed",
      "[error] stream disconnected before completion: Incomplete response returned, reason: max_output_tokens",
    ]);
  });

  it("gemini: echoed prompt, tool use and result, deltas joined into one answer, tokens", () => {
    expect(renderOutput(gemini.join("\n"), "gemini")).toEqual([
      "[session] test-session-id · gemini-3.1-flash-lite",
      "[user] Stream test",
      "[tool] read_file · README.md",
      "[tool result] # Project",
      "Final answer",
      "[result] success · 48 in / 13 out tokens · 1 tool call · 1.2 s",
    ]);
  });

  it("gemini: an API error ends with a failed result", () => {
    const lines = [
      '{"type":"init","session_id":"u1","model":"gemini-3.1-flash-lite"}',
      '{"type":"result","status":"error","error":{"type":"BatchError","message":"response blocked: SAFETY"},"stats":{"input_tokens":0,"output_tokens":0,"duration_ms":0}}',
    ];
    expect(renderOutput(lines.join("\n"), "gemini")).toEqual([
      "[session] u1 · gemini-3.1-flash-lite",
      "[result] failed · 0 in / 0 out tokens",
      "[error] BatchError · response blocked: SAFETY",
    ]);
  });

  it("lines that are not JSON (the truncation marker, stderr) are printed as they are", () => {
    const output = `...[truncated 1200 bytes]...\n${claude[5]}\nplain text`;
    expect(renderOutput(output, "claude")).toEqual([
      "...[truncated 1200 bytes]...",
      "[result] success · cost $0.0106 · 1 turn · 3.0 s",
      "plain text",
    ]);
  });
});

describe("vendor detection", () => {
  it.each([
    ["claude", claude],
    ["codex", codex],
    ["gemini", gemini],
    // A Gemini batch run's lines carry no timestamp (docs/batch-providers.md#results--lines).
    ["gemini", ['{"type":"init","session_id":"u","model":"gemini-3.1-flash-lite"}']],
  ])("%s lines", (vendor, lines) => {
    expect(detectVendor(lines)).toBe(vendor);
  });

  it("falls back to the Agent's model, then to Claude", () => {
    expect(vendorFor(["not json"], "gpt-5-mini")).toBe("codex");
    expect(vendorFor([], undefined)).toBe("claude");
  });
});

// The figure status shows is the controller's, read from the same lines (docs/cost-and-budgets.md).
describe("the run's cost and tokens from these lines (runUsage)", () => {
  const usage = (inputTokens: number, outputTokens: number, cacheReadTokens: number) => ({
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens: 0,
  });
  it.each([
    [
      "claude",
      claude,
      "claude-sonnet-4-6",
      { usage: usage(3, 24, 20012), costUsd: 0.0106, costSource: "reported" },
    ],
    // codex's input_tokens (24763) include the cached ones.
    ["codex", codex, "gpt-5-mini", { usage: usage(24763 - 24448, 122, 24448) }],
    ["gemini", gemini, "gemini-3.1-flash-lite", { usage: usage(48, 13, 0) }],
  ] as const)("%s", (vendor, lines, model, expected) => {
    expect(runUsage({ vendor, execution: "interactive", model, lines: lines.join("\n") })).toMatchObject(
      expected,
    );
  });

  it("is none without a result line", () => {
    const lines = claude.slice(0, 2).join("\n");
    expect(
      runUsage({ vendor: "claude", execution: "interactive", model: "claude-sonnet-4-6", lines }),
    ).toBeUndefined();
  });
});
