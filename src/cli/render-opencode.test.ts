/** `kubectl agent logs` and `status` on opencode's real lines (opencode-ai 1.18.33). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runUsage } from "../core/pricing/run-usage.js";
import { detectVendor, OutputRenderer, renderOutput, vendorFor } from "./render-output.js";

const FIXTURES = join(import.meta.dirname, "..", "..", "test", "fakes", "models", "fixtures", "opencode");
const fixture = (name: string): string => readFileSync(join(FIXTURES, `${name}.jsonl`), "utf8");

describe("opencode output", () => {
  it.each(["edit-anthropic", "text-openai", "api-401", "permission-rejected"])(
    "%s is recognised as opencode's, whatever the Agent's model says",
    (name) => {
      const lines = fixture(name).split("\n");
      expect(detectVendor(lines)).toBe("opencode");
      expect(vendorFor(lines, "claude-sonnet-4-6")).toBe("opencode");
    },
  );

  it("renders a run that edits a file: session, text, the tool call and its outcome, the summed cost", () => {
    expect(renderOutput(fixture("edit-anthropic"), "opencode")).toEqual([
      "[session] ses_dcb00dbe9ffeUjrv6vaixMak2h",
      "Writing.",
      "[tool] write · hello.txt",
      "[tool result] Wrote file successfully.",
      "Wrote it.",
      "[result] success · cost $0.0153 · 4869 in / 47 out tokens · 2 steps",
    ]);
  });

  it("renders an API error as a failed result with the provider's answer", () => {
    expect(renderOutput(fixture("api-401"), "opencode")).toEqual([
      "[result] failed",
      "[error] invalid x-api-key (HTTP 401)",
    ]);
  });

  it("renders a refused permission and closes the log with what the steps cost", () => {
    expect(renderOutput(fixture("permission-rejected"), "opencode")).toEqual([
      "[session] ses_dcb0ffc4affeIgJfJjQAV68CVz",
      "I will write it.",
      "[tool] write · /tmp/oc-disc/t8/outside.txt",
      "[tool error] The user rejected permission to use this specific tool call.",
      "[result] ended · cost $0.0006 · 100 in / 20 out tokens · 1 step",
    ]);
  });

  it("shows a step that ended another way on a line of its own", () => {
    expect(renderOutput(fixture("text-openai"), "opencode")).toEqual([
      "[session] ses_dcb00f94cffeNCCo5UDYr4HU6J",
      "Writing.",
      "[step] unknown · cost $0.0000 · 0 in / 0 out tokens",
      "Wrote it.",
      "[result] success · cost $0.0001 · 10 in / 5 out tokens · 2 steps",
    ]);
  });

  it("renders the same line by line as a followed log does", () => {
    const renderer = new OutputRenderer("opencode");
    const out = fixture("edit-anthropic")
      .split("\n")
      .flatMap((l) => renderer.line(l));
    expect([...out, ...renderer.end()]).toEqual(renderOutput(fixture("edit-anthropic"), "opencode"));
  });

  it("status: the cost is opencode's, summed over the steps", () => {
    const usage = (lines: string) =>
      runUsage({ vendor: "opencode", execution: "interactive", model: "anthropic/claude-sonnet-4-6", lines });
    expect(usage(fixture("edit-anthropic"))).toEqual({
      usage: { inputTokens: 4869, outputTokens: 47, cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: expect.closeTo(0.015312, 6),
      costSource: "reported",
    });
    expect(usage(fixture("api-401"))).toBeUndefined();
  });
});
