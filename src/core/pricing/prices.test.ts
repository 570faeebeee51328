import { describe, expect, it } from "vitest";
import { estimateCostUsd, NO_TOKENS } from "./estimate.js";
import { MODEL_PRICES, priceFor, ratesAt } from "./prices.js";
import { runUsage } from "./run-usage.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

const M = 1_000_000;
const j = (o: unknown) => JSON.stringify(o);

describe("the price table's entries (input / cache read / output, cache write, USD per million)", () => {
  it.each([
    { model: "claude-fable-5-2", input: 8, cacheRead: 0.2, output: 40, cacheWrite: 10 },
    { model: "claude-fable-5", input: 10, cacheRead: 1, output: 50, cacheWrite: 12.5 },
    { model: "gpt-5.2", input: 1.75, cacheRead: 0.175, output: 14, cacheWrite: 1.75 },
    { model: "gpt-5.2-codex", input: 1.75, cacheRead: 0.175, output: 14, cacheWrite: 1.75 },
    { model: "gpt-5.3-codex", input: 1.75, cacheRead: 0.175, output: 14, cacheWrite: 1.75 },
    { model: "gpt-5.4", input: 2.5, cacheRead: 0.25, output: 15, cacheWrite: 2.5 },
    { model: "gpt-5.4-mini", input: 0.75, cacheRead: 0.075, output: 4.5, cacheWrite: 0.75 },
    { model: "gpt-5.4-nano", input: 0.2, cacheRead: 0.02, output: 1.25, cacheWrite: 0.2 },
    { model: "gpt-5.5", input: 5, cacheRead: 0.5, output: 30, cacheWrite: 5 },
    { model: "gemini-3.1-pro-preview", input: 2, cacheRead: 0.2, output: 12, cacheWrite: 2 },
    { model: "gemini-3.5-flash", input: 1.5, cacheRead: 0.15, output: 9, cacheWrite: 1.5 },
    { model: "gemini-3.5-flash-lite", input: 0.3, cacheRead: 0.03, output: 2.5, cacheWrite: 0.3 },
    { model: "gemini-3.8-flash", input: 0.75, cacheRead: 0.075, output: 3.75, cacheWrite: 0.75 },
  ])("$model", ({ model, input, cacheRead, output, cacheWrite }) => {
    const rates = MODEL_PRICES[model]?.rates;
    expect(rates).toBeDefined();
    expect(rates?.input).toBeCloseTo(input, 10);
    expect(rates?.cacheRead).toBeCloseTo(cacheRead, 10);
    expect(rates?.output).toBeCloseTo(output, 10);
    expect(rates?.cacheWrite).toBeCloseTo(cacheWrite, 10);
    expect(MODEL_PRICES[model]?.source).not.toBe("");
    expect(MODEL_PRICES[model]?.asOf).toMatch(/^\d{4}-\d{2}(-\d{2})?$/);
  });

  it.each([
    { model: "gpt-5-codex", retired: true, deprecated: false },
    { model: "gpt-5.1", retired: false, deprecated: true },
    { model: "gpt-5-nano", retired: false, deprecated: true },
    { model: "gpt-5.5", retired: false, deprecated: false },
  ])("$model: retired $retired, deprecated $deprecated", ({ model, retired, deprecated }) => {
    expect(MODEL_PRICES[model]?.retired !== undefined).toBe(retired);
    expect(MODEL_PRICES[model]?.deprecated !== undefined).toBe(deprecated);
  });

  it("prices no gpt-5.6 model: no source gives its rates, its tokens take the vendor ceiling", () => {
    for (const id of ["gpt-5.6", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-6.1-sol"])
      expect(priceFor(id), id).toBeUndefined();
  });
});

describe("long-prompt tiers: every token of a request above the threshold at the higher rates", () => {
  it.each([
    { model: "gpt-5.4", prompt: 272_000, usd: 272_000 * 2.5 + M * 15 },
    { model: "gpt-5.4", prompt: 272_001, usd: 272_001 * 5 + M * 22.5 },
    { model: "gpt-5.5", prompt: 272_000, usd: 272_000 * 5 + M * 30 },
    { model: "gpt-5.5", prompt: 272_001, usd: 272_001 * 10 + M * 45 },
    { model: "gemini-3.1-pro-preview", prompt: 200_000, usd: 200_000 * 2 + M * 12 },
    { model: "gemini-3.1-pro-preview", prompt: 200_001, usd: 200_001 * 4 + M * 18 },
  ])("$model with a $prompt-token prompt and 1M output", ({ model, prompt, usd }) => {
    const cost = estimateCostUsd(model, { ...NO_TOKENS, inputTokens: prompt, outputTokens: M });
    expect(cost).toBeCloseTo(usd / M, 9);
  });
});

describe("rates that change on a date: the run's time decides", () => {
  const price = MODEL_PRICES["gemini-3.8-flash"];
  it.each([
    { at: "2026-12-01T00:00:00Z", input: 0.75, output: 3.75 },
    { at: "2026-12-31T23:59:59Z", input: 0.75, output: 3.75 },
    { at: "2027-01-01T00:00:00Z", input: 1.5, output: 7.5 },
    { at: "2027-06-01T12:00:00Z", input: 1.5, output: 7.5 },
  ])("gemini-3.8-flash at $at: $input / $output", ({ at, input, output }) => {
    if (price === undefined) throw new Error("gemini-3.8-flash not in the table");
    const rates = ratesAt(price, Date.parse(at));
    expect([rates.input, rates.output]).toEqual([input, output]);
    const cost = estimateCostUsd(
      "gemini-3.8-flash",
      { ...NO_TOKENS, inputTokens: M, outputTokens: M },
      false,
      Date.parse(at),
    );
    expect(cost).toBeCloseTo(input + output, 9);
  });

  it("a run's lines priced at the rate of the run's time", () => {
    const lines = j({
      type: "result",
      status: "success",
      stats: { total_tokens: 2 * M, input_tokens: M, output_tokens: M, cached: 0, input: M, models: {} },
    });
    const priced = (at: string) =>
      runUsage({
        vendor: "gemini",
        execution: "interactive",
        model: "gemini-3.8-flash",
        lines,
        at: Date.parse(at),
      });
    expect(priced("2026-12-30T10:00:00Z")?.costUsd).toBeCloseTo(4.5, 9);
    expect(priced("2027-01-02T10:00:00Z")?.costUsd).toBeCloseTo(9, 9);
  });

  it("the vendor ceiling includes the later rates", () => {
    expect(vendorCeilingRates("gemini").output).toBeGreaterThanOrEqual(7.5);
  });
});

describe("Anthropic cache writes: one-hour at 2x input, five-minute at 1.25x", () => {
  it.each([
    { model: "claude-sonnet-5", fiveMin: M, oneHour: 0, usd: 2.5 },
    { model: "claude-sonnet-5", fiveMin: 0, oneHour: M, usd: 4 },
    { model: "claude-sonnet-5", fiveMin: M, oneHour: M, usd: 6.5 },
    { model: "claude-opus-5-5", fiveMin: 0, oneHour: M, usd: 8 },
    { model: "claude-fable-5-2", fiveMin: 0, oneHour: M, usd: 16 },
    { model: "claude-haiku-4-5", fiveMin: 0, oneHour: M, usd: 2 },
  ])("$model: $fiveMin 5m + $oneHour 1h written → $usd", ({ model, fiveMin, oneHour, usd }) => {
    const u = { ...NO_TOKENS, cacheWriteTokens: fiveMin + oneHour, cacheWrite1hTokens: oneHour };
    expect(estimateCostUsd(model, u)).toBeCloseTo(usd, 9);
  });

  it("reads the split from claude's usage.cache_creation (a result without cost is priced from it)", () => {
    const line = j({
      type: "result",
      subtype: "success",
      usage: {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 2 * M,
        cache_creation: { ephemeral_5m_input_tokens: M, ephemeral_1h_input_tokens: M },
      },
    });
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-sonnet-5", lines: line });
    expect(u?.costUsd).toBeCloseTo(2.5 + 4, 9);
    expect(u?.usage).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 2 * M,
    });
  });
});

describe("batch and cache: Gemini cached tokens keep the cache rate, others are halved", () => {
  it.each([
    // Gemini: input and output halved, cached tokens at 10 % of input with no batch discount.
    { model: "gemini-2.5-flash", usd: (0.3 + 2.5) / 2 + 0.03 },
    { model: "gemini-3.5-flash", usd: (1.5 + 9) / 2 + 0.15 },
    // OpenAI and Anthropic: everything halved.
    { model: "gpt-5.4-mini", usd: (0.75 + 4.5 + 0.075) / 2 },
    { model: "claude-sonnet-5", usd: (2 + 10 + 0.2) / 2 },
  ])("$model: 1M each of input, output, cache read in a batch → $usd", ({ model, usd }) => {
    const u = { ...NO_TOKENS, inputTokens: M, outputTokens: M, cacheReadTokens: M };
    expect(estimateCostUsd(model, u, true)).toBeCloseTo(usd, 9);
  });
});
