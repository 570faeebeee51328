import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lastCliError } from "../readback/output.js";
import { claudeErrorMessage } from "./claude-errors.js";
import { announcedSessionId, parseJsonLine, terminalVerdict } from "./vendors.js";

/** Real Claude Code 2.1.328 stdout (test/fakes/models/fixtures/claude/README.md). */
const fixture = (name: string) =>
  readFileSync(join(__dirname, "../../../test/fakes/models/fixtures/claude", `${name}.jsonl`), "utf8");

const j = (o: Record<string, unknown>) => o;

describe("claudeErrorMessage on the real CLI's lines", () => {
  it.each([
    ["api-401", "Invalid API key · Fix external API key (API 401 authentication_error)"],
    ["api-401-default-retries", "Invalid API key · Fix external API key (API 401 authentication_error)"],
    [
      "api-429",
      "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
    ],
    [
      "api-500",
      "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:37185).",
    ],
    [
      "api-529",
      "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually temporary. Try again in a moment. If it persists, check your inference gateway (127.0.0.1:36403).",
    ],
    ["max-turns", "Reached maximum number of turns (1)"],
    [
      "resume-without-id",
      "Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>",
    ],
  ])("%s: the failure reason names what the CLI and the provider said", (name, reason) => {
    expect(lastCliError("claude", fixture(name))).toBe(reason);
  });

  it.each(["text", "edit-and-bash", "stream-cut-retried", "permission-denied"])(
    "%s: a successful run's lines carry no error, its retries aside",
    (name) => {
      const results = fixture(name)
        .split("\n")
        .map(parseJsonLine)
        .filter((l) => l?.type === "result");
      expect(results).toHaveLength(1);
      expect(claudeErrorMessage(results[0] ?? {})).toBeUndefined();
    },
  );

  it("reads the real api_retry lines: status, the CLI's error kind, the attempt", () => {
    const retries = fixture("api-429")
      .split("\n")
      .map(parseJsonLine)
      .filter((l) => l?.subtype === "api_retry")
      .map((l) => claudeErrorMessage(l ?? {}));
    expect(retries).toEqual([
      "API request failed (API 429 rate_limit); retry 1 of 3",
      "API request failed (API 429 rate_limit); retry 2 of 3",
      "API request failed (API 429 rate_limit); retry 3 of 3",
    ]);
    const cut = fixture("stream-cut-retried")
      .split("\n")
      .map(parseJsonLine)
      .find((l) => l?.subtype === "api_retry");
    expect(claudeErrorMessage(cut ?? {})).toBe("API request failed (no API response unknown); retry 1 of 3");
  });

  it("the last word of a CLI stopped while retrying is its last retry notice", () => {
    const log = fixture("api-401").split("\n").slice(0, 3).join("\n");
    expect(lastCliError("claude", log)).toBe(
      "API request failed (API 401 authentication_failed); retry 2 of 3",
    );
  });

  it.each([
    [j({ type: "result", is_error: false, result: "fine" }), undefined],
    [j({ type: "result", is_error: true, result: "", errors: [] }), undefined],
    [j({ type: "result", is_error: true, result: "boom", api_error_status: 500 }), "boom (API 500)"],
    [j({ type: "result", is_error: true, result: "HTTP 503 down", api_error_status: 503 }), "HTTP 503 down"],
    [j({ type: "result", is_error: true, result: "x", api_error_status: "401" }), "x"],
    [j({ type: "assistant", error: "authentication_failed" }), undefined],
    [j({ type: "system", subtype: "init" }), undefined],
    [j({ type: "system", subtype: "api_retry" }), "API request failed (no API response)"],
  ])("%j → %s", (line, message) => {
    expect(claudeErrorMessage(line)).toBe(message);
  });
});

describe("the claude adapter on the real CLI's lines", () => {
  it("a tool run: the result line is terminal and successful, the session id announced by init and result", () => {
    const lines = fixture("edit-and-bash").trim().split("\n");
    const last = lines.at(-1) ?? "";
    expect(terminalVerdict("claude", last)).toEqual({ success: true });
    expect(lines.slice(0, -1).map((l) => terminalVerdict("claude", l))).toEqual(
      lines.slice(0, -1).map(() => undefined),
    );
    const id = announcedSessionId("claude", lines[0] ?? "");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(announcedSessionId("claude", last)).toBe(id);
  });

  it("an API failure: the result line (subtype success, is_error true) is terminal and unsuccessful", () => {
    const last = fixture("api-401").trim().split("\n").at(-1) ?? "";
    expect(terminalVerdict("claude", last)).toEqual({ success: false });
  });
});
