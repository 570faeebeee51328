/**
 * The real codex 0.169.0 `exec --json` lines (captured from the CLI run as the run pod runs it,
 * against the local OpenAI Responses server: test/fakes/models/fixtures/codex/) through everything
 * that reads them: the vendor adapter, the failure reason, output.select, and the rendering and
 * cost of `kubectl agent logs` / `status`.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { detectVendor, renderOutput } from "../../cli/render-output.js";
import { classifyLine, passesSelect } from "../../sinks/select.js";
import { runUsage } from "../pricing/run-usage.js";
import { lastCliError } from "../readback/output.js";
import { announcedSessionId, cliErrorMessage, terminalVerdict } from "./vendors.js";

const fixture = (name: string): string =>
  readFileSync(new URL(`../../../test/fakes/models/fixtures/codex/${name}.ndjson`, import.meta.url), "utf8");
const lines = (name: string): string[] =>
  fixture(name)
    .split("\n")
    .filter((l) => l !== "");
/** The run's tokens as the controller records them in status.usage. */
const tokens = (text: string) =>
  runUsage({ vendor: "codex", execution: "interactive", model: "gpt-5-mini", lines: text })?.usage;

describe("the real codex lines", () => {
  it.each([
    ["edit", true],
    ["shell", true],
    ["bypass-dash-prompt", true],
    ["resume-second", true],
    ["http-401", false],
    ["http-429", false],
    ["http-500", false],
    ["response-failed", false],
    ["missing-key", false],
    ["unreachable", false],
  ])(
    "%s: the last line is the terminal one (success %s), the first announces the thread",
    (name, success) => {
      const all = lines(name);
      expect(all.map((l) => terminalVerdict("codex", l)).filter((v) => v !== undefined)).toEqual([
        { success },
      ]);
      expect(terminalVerdict("codex", all.at(-1) ?? "")).toEqual({ success });
      expect(announcedSessionId("codex", all[0] ?? "")).toMatch(/^[0-9a-f-]{36}$/);
    },
  );

  it.each([
    [
      "http-401",
      /^unexpected status 401 Unauthorized: Incorrect API key provided: sk-test\. .*url: http:\/\/127\.0\.0\.1:\d+\/v1\/responses, request id: req_\w+$/,
    ],
    ["http-429", /^exceeded retry limit, last status: 429 Too Many Requests, request id: req_\w+$/],
    ["http-500", /^We’re currently experiencing high demand, which may cause temporary errors\.$/],
    ["response-failed", /^stream disconnected before completion: The model failed to generate a response\.$/],
    [
      "missing-key",
      /^Missing environment variable: `CODEX_API_KEY`\. Give the run OPENAI_API_KEY or CODEX_API_KEY \(resources\.secrets\)\.$/,
    ],
    ["unreachable", /^Connection failed: error sending request$/],
  ])("%s: the failure reason is what the provider answered", (name, reason) => {
    expect(lastCliError("codex", fixture(name))).toMatch(reason);
  });

  it("a run stopped while codex still retried names the cause of the retries", () => {
    const stopped = lines("http-401").slice(0, 3).join("\n");
    expect(lastCliError("codex", stopped)).toMatch(
      /^Reconnecting\.\.\. 1\/2 \(unexpected status 401 Unauthorized: /,
    );
  });

  it("successful runs carry no error; a warning item is not one", () => {
    for (const name of ["edit", "shell", "resume-second"])
      expect(lastCliError("codex", fixture(name))).toBe("");
    const warning =
      '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}';
    expect(cliErrorMessage("codex", warning)).toBeUndefined();
    expect(cliErrorMessage("codex", '{"type":"turn.failed","error":{}}')).toBeUndefined();
  });

  it("output.select classifies the edit, the shell command, the answer and the usage", () => {
    const classes = [...lines("edit"), ...lines("shell")].map((l) => classifyLine("codex", l)?.class);
    expect(classes).toEqual([
      undefined, // thread.started
      undefined, // turn.started
      undefined, // item.started file_change
      "tool_call", // item.completed file_change
      "message",
      "usage",
      undefined,
      undefined,
      undefined, // item.started command_execution
      "tool_call",
      "message",
      "usage",
    ]);
    const selected = lines("shell").filter((l) =>
      passesSelect(
        [
          { event: "tool_call", contains: "made.txt" },
          { event: "message", role: "assistant" },
        ],
        "codex",
        l,
      ),
    );
    expect(selected.map((l) => JSON.parse(l).item.type)).toEqual(["command_execution", "agent_message"]);
  });

  it("kubectl agent logs renders them, and the tokens are the turn.completed's", () => {
    const output = fixture("edit");
    expect(detectVendor(output.split("\n"))).toBe("codex");
    const rendered = renderOutput(output, "codex");
    expect(rendered).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\[session\] [0-9a-f-]{36}$/),
        expect.stringMatching(/^\[tool\] edit · add \/.*\/workspace\/hello\.txt$/),
        "Wrote hello.txt.",
        "[result] success · 1210 in / 35 out tokens · 1000 cached",
      ]),
    );
    expect(renderOutput(fixture("http-401"), "codex")).toEqual(
      expect.arrayContaining([
        "[result] failed",
        expect.stringMatching(/^\[error\] unexpected status 401 Unauthorized/),
      ]),
    );
    // input_tokens (1210) include the 1000 cached ones.
    expect(tokens(output)).toEqual({
      inputTokens: 210,
      outputTokens: 35,
      cacheReadTokens: 1000,
      cacheWriteTokens: 0,
    });
  });

  it("exec resume reports the thread's running totals, so a session's tokens are its last turn.completed's", () => {
    // Input tokens below are uncached + cached: 60 + 40 = 100, 110 + 190 = 300.
    expect(tokens(fixture("resume-first"))).toEqual({
      inputTokens: 60,
      outputTokens: 7,
      cacheReadTokens: 40,
      cacheWriteTokens: 0,
    });
    // The model server answered 100/7 then 200/9: the resumed turn reports their sum.
    const sum = { inputTokens: 110, outputTokens: 16, cacheReadTokens: 190, cacheWriteTokens: 0 };
    expect(tokens(fixture("resume-second"))).toEqual(sum);
    // Both processes' lines (a realtime session's log): the sum, not counted twice.
    const session = `${fixture("resume-first")}${fixture("resume-second")}`;
    expect(tokens(session)).toEqual(sum);
  });
});
