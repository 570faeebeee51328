import { describe, expect, it } from "vitest";
import {
  BYTES_PER_INPUT_TOKEN,
  callCostUsd,
  DEFAULT_MAX_OUTPUT_TOKENS,
  requestFacts,
  worstCaseUsd,
} from "./request-cost.js";

const T = Date.parse("2026-12-07T12:00:00Z");
const body = (o: unknown) => Buffer.from(JSON.stringify(o));

describe("requestFacts: the body's model and output limit, per API", () => {
  const cases: [
    string,
    Parameters<typeof requestFacts>[0],
    Buffer | undefined,
    ReturnType<typeof requestFacts>,
  ][] = [
    [
      "Anthropic max_tokens",
      "anthropic",
      body({ model: "claude-sonnet-4-6", max_tokens: 4096 }),
      { model: "claude-sonnet-4-6", maxOutputTokens: 4096 },
    ],
    [
      "OpenAI max_output_tokens",
      "openai",
      body({ model: "gpt-5.5", max_output_tokens: 800 }),
      { model: "gpt-5.5", maxOutputTokens: 800 },
    ],
    [
      "Gemini generationConfig.maxOutputTokens",
      "gemini",
      body({ generationConfig: { maxOutputTokens: 2048 } }),
      { maxOutputTokens: 2048 },
    ],
    ["no limit named", "openai", body({ model: "gpt-5.5" }), { model: "gpt-5.5" }],
    ["a limit that is not a positive integer is no limit", "anthropic", body({ max_tokens: -1 }), {}],
    ["not JSON", "anthropic", Buffer.from("{nope"), {}],
    ["a JSON array", "anthropic", body([1]), {}],
    ["no body", "anthropic", undefined, {}],
  ];
  for (const [name, vendor, b, want] of cases) it(name, () => expect(requestFacts(vendor, b)).toEqual(want));
});

describe("worstCaseUsd", () => {
  it("the body's size as input and the output limit, at the model's prices", () => {
    // claude-sonnet-4-6: $3 input, $15 output per million tokens.
    const w = worstCaseUsd("anthropic", "claude-sonnet-4-6", 3_000_000, 100_000, T);
    expect(w.usd).toBeCloseTo((3_000_000 / BYTES_PER_INPUT_TOKEN) * 3e-6 + 100_000 * 15e-6, 9);
    expect(w.why).toBe("about 1000000 input tokens and output limit 100000, at claude-sonnet-4-6's price");
  });
  it("no output limit: the default is reserved, and said", () => {
    const w = worstCaseUsd("anthropic", "claude-sonnet-4-6", 0, undefined, T);
    expect(w.usd).toBeCloseTo(DEFAULT_MAX_OUTPUT_TOKENS * 15e-6, 9);
    expect(w.why).toContain(`no output limit: ${DEFAULT_MAX_OUTPUT_TOKENS} reserved`);
  });
  it("a model without a price: the vendor's highest rates, never free", () => {
    expect(worstCaseUsd("openai", "gpt-unknown", 3000, 1000, T).usd).toBeGreaterThan(0);
  });
});

describe("callCostUsd", () => {
  it("prices one answer's four kinds of tokens", () => {
    expect(
      callCostUsd(
        "anthropic",
        "claude-sonnet-4-6",
        { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
        T,
      ),
    ).toBeCloseTo(0.0045, 9);
  });
});
