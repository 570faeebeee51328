import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runUsage } from "../core/pricing/run-usage.js";
import { detectVendor, renderOutput } from "./render-output.js";

/** Lines the real gemini CLI 0.61.0 printed (docs/agent-clis.md, gemini). */
const fixture = (name: string) =>
  readFileSync(join(import.meta.dirname, "../../test/fakes/models/fixtures/gemini", name), "utf8");

describe("kubectl agent logs on the real gemini CLI's lines", () => {
  it("an edit through write_file: session, prompt, tool call, joined answer, tokens", () => {
    const text = fixture("edit-success.ndjson");
    expect(detectVendor(text.split("\n"))).toBe("gemini");
    expect(renderOutput(text, "gemini")).toEqual([
      "[session] 6a9d0e07-a34c-4645-bb32-009f63de3cd2 · gemini-2.5-pro",
      "[user] write",
      "I will write the file.",
      "[tool] write_file · hello.txt",
      "[tool result]",
      "Wrote hello.txt.",
      "[result] success · 20 in / 10 out tokens · 1 tool call · 1.3 s",
    ]);
    // status: the tokens the controller reads from the same lines.
    const usage = runUsage({
      vendor: "gemini",
      execution: "interactive",
      model: "gemini-2.5-pro",
      lines: text,
    });
    expect(usage?.usage).toEqual({
      inputTokens: 20,
      outputTokens: 10,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
  });

  it("an API error: the provider's answer unwrapped from Google's envelope, on one line", () => {
    expect(renderOutput(fixture("api-401.ndjson"), "gemini").slice(-2)).toEqual([
      "[result] failed · 0 in / 0 out tokens",
      "[error] API error 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
    ]);
    expect(renderOutput(fixture("api-429.ndjson"), "gemini").at(-1)).toBe(
      "[error] API error: Resource has been exhausted (e.g. check quota). Please wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
    );
  });

  it("a tool call the policy denied", () => {
    expect(renderOutput(fixture("policy-denied.ndjson"), "gemini")).toEqual([
      "[tool] run_shell_command · rm -f nothing",
      "[tool error] Tool execution denied by policy.",
    ]);
  });
});
