/** `kubectl agent logs` and `status` on claude's real lines (Claude Code 2.1.328). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runUsage } from "../core/pricing/run-usage.js";
import { detectVendor, OutputRenderer, renderOutput, vendorFor } from "./render-output.js";

const FIXTURES = join(import.meta.dirname, "..", "..", "test", "fakes", "models", "fixtures", "claude");
const fixture = (name: string): string => readFileSync(join(FIXTURES, `${name}.jsonl`), "utf8");

describe("claude output", () => {
  it.each([
    "text",
    "edit-and-bash",
    "api-401",
    "api-529",
    "permission-denied",
    "max-turns",
    "resume-without-id",
  ])("%s is recognised as claude's, whatever the Agent's model says", (name) => {
    const lines = fixture(name).split("\n");
    expect(detectVendor(lines)).toBe("claude");
    expect(vendorFor(lines, "gemini-2.5-pro")).toBe("claude");
  });

  it("renders a run that edits a file: session, text, the tool calls and their results, the cost", () => {
    expect(renderOutput(fixture("edit-and-bash"), "claude")).toEqual([
      "[session] c834bff4-1041-4f5d-bf5d-dfd58b529e5c · claude-opus-5-5",
      "Bumping the version.",
      "[tool] Edit · /tmp/disc-wt/config.txt",
      "[tool result] The file /tmp/disc-wt/config.txt has been updated successfully.",
      "[tool] Bash · cat config.txt",
      "[tool result] version = 2",
      "Version bumped to 2.",
      "[result] success · cost $0.0442 · 3 turns · 4.1 s",
    ]);
    // status: the cost claude reported, and its tokens (docs/cost-and-budgets.md).
    const lines = fixture("edit-and-bash");
    const usage = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(usage).toEqual({
      usage: { inputTokens: 10306, outputTokens: 118, cacheReadTokens: 800, cacheWriteTokens: 100 },
      costUsd: expect.closeTo(0.044244, 6),
      costSource: "reported",
    });
  });

  it("renders a failed API call: each retry notice, then the result with the CLI's message once", () => {
    expect(renderOutput(fixture("api-401"), "claude")).toEqual([
      "[session] 90346772-478c-4e11-b705-d6f2e09f00d6 · claude-opus-5-5",
      "[retry] API 401 · authentication_failed · attempt 1 of 3 · next in 0.6 s",
      "[retry] API 401 · authentication_failed · attempt 2 of 3 · next in 1.0 s",
      "[retry] API 401 · authentication_failed · attempt 3 of 3 · next in 2.1 s",
      "[result] failed (API 401) · cost $0.0000 · 1 turn · 5.3 s",
      "[error] Invalid API key · Fix external API key",
    ]);
  });

  it("renders a dropped stream's retry and a refused tool call", () => {
    expect(renderOutput(fixture("stream-cut-retried"), "claude")).toEqual([
      "[session] 653537d4-1e7d-499e-a108-03e7f5c64ba9 · claude-opus-5-5",
      "[retry] no API response · unknown · attempt 1 of 3 · next in 0.5 s",
      "after cut",
      "[result] success · cost $0.0353 · 1 turn · 1.5 s",
    ]);
    expect(renderOutput(fixture("permission-denied"), "claude")).toEqual([
      "[session] d731aa29-3003-4bf5-b9e1-da9a75999099 · claude-opus-5-5",
      "[tool] Write · /tmp/disc-inj/x.txt",
      "[tool error] Claude requested permissions to write to /tmp/disc-inj/x.txt, but you haven't granted it yet.",
      "ok",
      "[result] success · cost $0.0362 · 2 turns · 3.1 s",
    ]);
  });

  it("renders the same line by line as a followed log", () => {
    const renderer = new OutputRenderer("claude");
    const followed = fixture("max-turns")
      .split("\n")
      .flatMap((l) => renderer.line(l));
    expect([...followed, ...renderer.end()]).toEqual(renderOutput(fixture("max-turns"), "claude"));
    expect(followed.slice(-2)).toEqual([
      "[result] failed (error_max_turns) · cost $0.0186 · 2 turns · 2.2 s",
      "[error] Reached maximum number of turns (1)",
    ]);
  });
});
