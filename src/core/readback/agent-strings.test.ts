import { describe, expect, it } from "vitest";
import { MAX_SESSION_ID_CHARS, prUrlProblem, sessionIdProblem } from "./agent-strings.js";

describe("sessionIdProblem: an id outside the bounds is refused whole, never shortened", () => {
  it.each([
    ["a claude session (UUID)", "0f8fad5b-d9cb-469f-a165-70867728950e", undefined],
    ["a codex thread id", "019a3b2c-1d4e-7f00-8000-0123456789ab", undefined],
    ["opencode's ses_… (not a UUID)", "ses_3f2a9c1b7e0dFFabc123", undefined],
    ["at the length bound", "a".repeat(MAX_SESSION_ID_CHARS), undefined],
    ["one past it", "a".repeat(MAX_SESSION_ID_CHARS + 1), /129 characters/],
    ["M3's 4 MiB id", "s".repeat(4 * 1024 * 1024), /4194304 characters/],
    ["a newline", "abc\ndef", /characters outside/],
    ["a path", "../../etc/passwd", /characters outside/],
    ["a leading dash (an option to the CLI)", "-rf", /characters outside/],
    ["a space", "a b", /characters outside/],
  ])("%s", (_, id, want) => {
    const problem = sessionIdProblem(id);
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });
});

describe("prUrlProblem", () => {
  it.each([
    ["a GitHub pull request", "https://github.com/acme/app/pull/12", undefined],
    ["a GitHub Enterprise one over http", "http://ghe.local/acme/app/pull/1", undefined],
    ["javascript:", "javascript:alert(1)", /not http/],
    ["whitespace", "https://x/pull/1 and more", /not http/],
    ["4 KiB", `https://x/${"a".repeat(4096)}`, /characters \(at most 2048\)/],
  ])("%s", (_, url, want) => {
    const problem = prUrlProblem(url);
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });
});
