import { describe, expect, it } from "vitest";
import { ANTHROPIC_PRICES, batchCostUsd, PRICE_TABLE_DATE } from "./pricing.js";

const M = 1_000_000;

describe("batchCostUsd", () => {
  it("pins the table's date", () => {
    expect(PRICE_TABLE_DATE).toBe("2026-10");
  });

  // Batch price = half the list price (docs/batch-providers.md#cost), per million tokens.
  it.each([
    { model: "claude-opus-5-5", input: M, output: 0, usd: 2 },
    { model: "claude-opus-5-5", input: 0, output: M, usd: 10 },
    { model: "claude-opus-5", input: M, output: M, usd: 2.5 + 12.5 },
    { model: "claude-opus-4-6", input: M, output: M, usd: 15 },
    { model: "claude-sonnet-5-5", input: M, output: M, usd: 1 + 5 },
    { model: "claude-sonnet-5", input: M, output: M, usd: 6 },
    { model: "claude-sonnet-4-6", input: 48, output: 75, usd: 0.0006345 },
    { model: "claude-sonnet-4-5", input: M, output: M, usd: 9 },
    { model: "claude-haiku-4-5", input: M, output: M, usd: 0.5 + 2.5 },
    { model: "claude-fable-5-1", input: M, output: M, usd: 5 + 25 },
    // Haiku 5.5: the long-prompt tier starts above 100,000 prompt tokens and then prices everything.
    { model: "claude-haiku-5-5", input: 100_000, output: M, usd: 0.005 + 0.25 },
    { model: "claude-haiku-5-5", input: 100_001, output: M, usd: (100_001 * 50 + M * 250) / (100 * M * 2) },
    { model: "claude-haiku-5-5", input: 200_000, output: 0, usd: 0.05 },
    // Exact ids only: dated snapshots, other vendors and unknown ids cost 0.
    { model: "claude-sonnet-4-6-20260101", input: M, output: M, usd: 0 },
    { model: "Claude-Sonnet-4-6", input: M, output: M, usd: 0 },
    { model: "gpt-5-mini", input: M, output: M, usd: 0 },
    { model: "", input: M, output: M, usd: 0 },
  ])("$model in=$input out=$output → $usd", ({ model, input, output, usd }) => {
    expect(batchCostUsd(model, { input_tokens: input, output_tokens: output })).toBeCloseTo(usd, 12);
  });

  it("does not price cache tokens", () => {
    const plain = batchCostUsd("claude-sonnet-4-6", { input_tokens: 1000, output_tokens: 100 });
    const cached = batchCostUsd("claude-sonnet-4-6", {
      input_tokens: 1000,
      output_tokens: 100,
      cache_creation_input_tokens: 50_000,
      cache_read_input_tokens: 40_000,
    });
    expect(cached).toBe(plain);
  });

  // docs/decisions.md D-113: the seed's rule is "more than 100,000 input tokens"; cache tokens do not
  // move a request into the long-prompt tier.
  it.each([
    { input: 100_000, cacheRead: 50_000, cacheWrite: 0, long: false },
    { input: 100_000, cacheRead: 0, cacheWrite: 30_000, long: false },
    { input: 60_000, cacheRead: 40_001, cacheWrite: 0, long: false },
    { input: 100_001, cacheRead: 0, cacheWrite: 0, long: true },
    { input: 100_001, cacheRead: 5_000, cacheWrite: 5_000, long: true },
  ])(
    "haiku 5.5 with $input input + $cacheRead cache-read + $cacheWrite cache-write tokens: long tier $long",
    ({ input, cacheRead, cacheWrite, long }) => {
      const usage = {
        input_tokens: input,
        output_tokens: 1_000,
        cache_read_input_tokens: cacheRead,
        cache_creation_input_tokens: cacheWrite,
      };
      const [inRate, outRate] = long ? [0.25, 1.25] : [0.05, 0.25];
      expect(batchCostUsd("claude-haiku-5-5", usage)).toBeCloseTo((input * inRate + 1_000 * outRate) / M, 12);
    },
  );

  it("has no prefix or case tolerance in the table", () => {
    expect(Object.keys(ANTHROPIC_PRICES).every((k) => k === k.toLowerCase() && k.startsWith("claude-"))).toBe(
      true,
    );
  });
});
