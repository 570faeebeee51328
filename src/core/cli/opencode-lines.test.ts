/** opencode's real lines (opencode-ai 1.18.33, captured against the local model servers). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lastCliError, lastSessionId } from "../readback/output.js";
import { opencodeStepUsage } from "./opencode-lines.js";
import { announcedSessionId, cliErrorMessage, parseJsonLine, terminalVerdict } from "./vendors.js";

const FIXTURES = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "test",
  "fakes",
  "models",
  "fixtures",
  "opencode",
);
const fixture = (name: string): string => readFileSync(join(FIXTURES, `${name}.jsonl`), "utf8");
const lines = (name: string): string[] =>
  fixture(name)
    .split("\n")
    .filter((l) => l.trim() !== "");

describe("opencode terminal line", () => {
  it("is the step_finish with reason stop, the last line of a finished run", () => {
    const log = lines("edit-anthropic");
    const verdicts = log.map((l) => terminalVerdict("opencode", l));
    expect(verdicts.slice(0, -1).every((v) => v === undefined)).toBe(true);
    expect(verdicts.at(-1)).toEqual({ success: true });
  });

  it.each([
    "api-401",
    "api-429",
    "unreachable",
    "unknown-model",
    "google-key-missing",
    "permission-rejected",
  ])("%s has none: its exit code decides", (name) => {
    expect(lines(name).map((l) => terminalVerdict("opencode", l))).toEqual(lines(name).map(() => undefined));
  });

  it("is not fooled by a subagent: only the run's own steps are printed, the last one ends it", () => {
    const log = lines("subagent");
    expect(log.filter((l) => terminalVerdict("opencode", l) !== undefined)).toEqual([log.at(-1)]);
  });
});

describe("opencode session id", () => {
  it.each(["edit-anthropic", "api-401", "permission-rejected"])(
    "%s: every line names the session",
    (name) => {
      const ids = new Set(lines(name).map((l) => announcedSessionId("opencode", l)));
      expect(ids.size).toBe(1);
      expect([...ids][0]).toMatch(/^ses_/);
      expect(lastSessionId("opencode", fixture(name))).toBe([...ids][0]);
    },
  );

  it("ignores lines without one", () => {
    expect(announcedSessionId("opencode", '{"type":"text","sessionID":""}')).toBeUndefined();
    expect(announcedSessionId("opencode", '{"type":"result","session_id":"x"}')).toBeUndefined();
  });
});

describe("opencode error message (what failureReason quotes)", () => {
  it.each([
    ["api-401", "invalid x-api-key (HTTP 401)"],
    ["api-429", "Number of request tokens has exceeded your per-minute rate limit (HTTP 429)"],
    ["unreachable", "Cannot connect to API: Unable to connect. Is the computer able to access the url?"],
    ["unknown-model", "Unexpected server error. Check server logs for details."],
    [
      "google-key-missing",
      "Google Generative AI API key is missing. Pass it using the 'apiKey' parameter or the GOOGLE_GENERATIVE_AI_API_KEY environment variable.",
    ],
    ["edit-anthropic", ""],
    ["permission-rejected", ""],
  ])("%s → %j", (name, message) => {
    expect(lastCliError("opencode", fixture(name))).toBe(message);
  });

  it("falls back to the error's name when it carries no message", () => {
    expect(
      cliErrorMessage("opencode", '{"type":"error","error":{"name":"MessageAbortedError","data":{}}}'),
    ).toBe("MessageAbortedError");
    expect(cliErrorMessage("opencode", '{"type":"text","part":{"text":"error"}}')).toBeUndefined();
  });
});

describe("opencodeStepUsage", () => {
  it("reads the reason, cost and tokens of each step_finish", () => {
    const usage = lines("edit-anthropic")
      .map((l) => parseJsonLine(l))
      .map((j) => (j ? opencodeStepUsage(j) : undefined))
      .filter((u) => u !== undefined);
    expect(usage).toEqual([
      {
        reason: "tool-calls",
        cost: 0.007743,
        inputTokens: 2391,
        outputTokens: 38,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
      {
        reason: "stop",
        cost: 0.007569,
        inputTokens: 2478,
        outputTokens: 9,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
    ]);
  });
});
