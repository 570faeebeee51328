/**
 * docs/decisions.md D-108: a truncated answer ends the same way for all three vendors: Failed, with
 * `Incomplete response returned, reason: <the vendor's reason>` as failureReason and the vendor
 * CLI's failure lines.
 */
import { describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { AnthropicBatchProvider } from "./anthropic.js";
import { GeminiBatchProvider } from "./gemini.js";
import { OpenAIBatchProvider } from "./openai.js";
import type { BatchPollResult, BatchProvider } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";

interface Case {
  vendor: string;
  model: string;
  reason: string;
  /** Starts the fake with a truncated answer scripted, runs the batch to its end, returns the poll. */
  run(): Promise<{ result: BatchPollResult; close: () => Promise<void> }>;
}

async function submitAndFinish(
  provider: BatchProvider,
  apiKey: string,
  model: string,
  finish: (batchId: string) => void,
): Promise<BatchPollResult> {
  const { batchId } = await provider.submit({ agentUid: UID, model, prompt: "p", maxTokens: 64, apiKey });
  finish(batchId);
  return provider.poll(batchId, { agentUid: UID, model, apiKey });
}

const cases: Case[] = [
  {
    vendor: "anthropic (stop_reason max_tokens)",
    model: "claude-sonnet-4-6",
    reason: "Incomplete response returned, reason: max_tokens",
    async run() {
      const fake = await startFakeAnthropic();
      fake.script({ type: "succeeded", text: '{"sev', message: { stop_reason: "max_tokens" } });
      const p = new AnthropicBatchProvider({ baseUrl: fake.url });
      return {
        result: await submitAndFinish(p, fake.apiKey, this.model, (id) => fake.finish(id)),
        close: fake.close,
      };
    },
  },
  {
    vendor: "gemini (finishReason MAX_TOKENS)",
    model: "gemini-3.1-flash-lite",
    reason: "Incomplete response returned, reason: MAX_TOKENS",
    async run() {
      const fake = await startFakeGemini();
      fake.script({
        type: "succeeded",
        response: {
          candidates: [
            { content: { role: "model", parts: [{ text: '{"sev' }] }, finishReason: "MAX_TOKENS", index: 0 },
          ],
        },
      });
      const p = new GeminiBatchProvider({ baseUrl: fake.url });
      return {
        result: await submitAndFinish(p, fake.apiKey, this.model, (id) => fake.finish(id)),
        close: fake.close,
      };
    },
  },
  {
    vendor: "openai (status incomplete)",
    model: "gpt-5-mini",
    reason: "Incomplete response returned, reason: max_output_tokens",
    async run() {
      const fake = await startFakeOpenAI();
      fake.script({ type: "incomplete" });
      const p = new OpenAIBatchProvider({ baseUrl: fake.url });
      return {
        result: await submitAndFinish(p, fake.apiKey, this.model, (id) => fake.finish(id)),
        close: fake.close,
      };
    },
  },
];

describe("a truncated answer", () => {
  it.each(cases)("$vendor fails the run with `$reason`", async (c) => {
    const { result, close } = await c.run();
    try {
      expect(result).toMatchObject({ state: "ended", outcome: "failed", failureReason: c.reason });
      // Every vendor's failure lines name the reason, as its CLI reports a failed call.
      const lines = result.state === "ended" ? result.lines : [];
      expect(lines.at(-1)).toContain(c.reason);
    } finally {
      await close();
    }
  });

  it("anthropic keeps the billed usage and cost of the cut-off answer", async () => {
    const [anthropic] = cases;
    if (anthropic === undefined) throw new Error("the anthropic case is missing");
    const { result, close } = await anthropic.run();
    await close();
    const last = JSON.parse(result.state === "ended" ? (result.lines.at(-1) ?? "{}") : "{}");
    expect(last).toMatchObject({
      type: "result",
      is_error: true,
      stop_reason: "max_tokens",
      usage: { input_tokens: 48, output_tokens: 75 },
    });
    expect(last.total_cost_usd).toBeGreaterThan(0);
  });
});
