/**
 * A bill the agent cannot inflate (docs/cost-and-budgets.md#a-bill-the-agent-cannot-inflate): the
 * agent prints the lines its cost is read from, so a figure they report is believed only up to
 * what their tokens could cost at the vendor's highest known rates, and costUSD is always a plain
 * decimal the CRD's pattern accepts.
 */
import { describe, expect, it } from "vitest";
import { formatUsd } from "./estimate.js";
import { MODEL_PRICES, modelIdCandidates, priceFor } from "./prices.js";
import { REPORT_HEADROOM, runUsage } from "./run-usage.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

const COST_PATTERN = /^[0-9]+(\.[0-9]+)?$/;
const j = (o: unknown) => JSON.stringify(o);
const claudeResult = (cost: number, input: number, output: number) =>
  j({
    type: "result",
    subtype: "success",
    total_cost_usd: cost,
    usage: { input_tokens: input, output_tokens: output },
  });

describe("formatUsd: always a plain decimal the CRD accepts", () => {
  it.each([
    [1e15 + 0.393216, "1000000000000000.375"],
    [1e21, "1000000000000000000000"],
    [1e21 + 0.555072, "1000000000000000000000"],
    [Number.MAX_VALUE, undefined],
    [Number.NaN, "0"],
    [Number.POSITIVE_INFINITY, "0"],
    [-5, "0"],
  ])("%s", (usd, text) => {
    const out = formatUsd(usd);
    expect(out).toMatch(COST_PATTERN);
    expect(out).not.toContain("e");
    if (text !== undefined) expect(out).toBe(text);
  });
});

describe("vendorCeilingRates", () => {
  it("is at least every rate of each model the vendor serves (long-prompt tiers included)", () => {
    const claude = vendorCeilingRates("claude");
    for (const [model, price] of Object.entries(MODEL_PRICES)) {
      if (!model.startsWith("claude")) continue;
      for (const rates of [price.rates, price.longPrompt?.rates].filter((r) => r !== undefined)) {
        expect(claude.output).toBeGreaterThanOrEqual(rates.output);
        expect(claude.input).toBeGreaterThanOrEqual(rates.input);
      }
    }
  });

  it("opencode, which runs any vendor's models, is bounded by the whole table", () => {
    const all = vendorCeilingRates("opencode");
    for (const v of ["claude", "codex", "gemini"] as const) {
      expect(all.output).toBeGreaterThanOrEqual(vendorCeilingRates(v).output);
    }
  });
});

describe("a reported cost above what the tokens could cost is not believed", () => {
  const ceiling = vendorCeilingRates("claude");
  const honestMax = (1000 * ceiling.input + 500 * ceiling.output) / 1e6;

  it.each([
    ["the attack's forged figure", 1e15 + 0.393216],
    ["past the Number's exponent form", 1e21],
    ["just past the headroom", honestMax * REPORT_HEADROOM.factor + REPORT_HEADROOM.usd + 0.01],
  ])("%s: refused, priced from the tokens, the figure kept as rejected", (_, forged) => {
    const lines = [
      j({ type: "system", subtype: "init", model: "claude-opus-5-5" }),
      claudeResult(forged, 1000, 500),
    ].join("\n");
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(u?.rejectedReportUsd).toBe(forged);
    expect(u?.costSource).toBe("estimated");
    // claude-opus-5-5: 4 / 20 per million.
    expect(u?.costUsd).toBeCloseTo((1000 * 4 + 500 * 20) / 1e6, 9);
  });

  it("a figure within the headroom (non-token charges such as web searches) is believed", () => {
    const lines = claudeResult(honestMax + 0.5, 1000, 500);
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(u?.rejectedReportUsd).toBeUndefined();
    expect(u?.costSource).toBe("reported");
    expect(u?.costUsd).toBe(honestMax + 0.5);
  });

  it("the headroom is per run: many forged lines cannot each add it", () => {
    const lines = Array.from({ length: 50 }, () => claudeResult(REPORT_HEADROOM.usd, 0, 0)).join("\n");
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(u?.rejectedReportUsd).toBe(50 * REPORT_HEADROOM.usd);
    expect(u?.costUsd).toBe(0);
  });

  it("a refused report of a model without a price is charged at the vendor's highest rates, never free", () => {
    const lines = j({
      type: "result",
      total_cost_usd: 1e12,
      usage: { input_tokens: 1000, output_tokens: 500 },
      modelUsage: { "claude-unknown-9": { inputTokens: 1000, outputTokens: 500 } },
    });
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-unknown-9", lines });
    expect(u?.rejectedReportUsd).toBe(1e12);
    expect(u?.costUsd).toBeCloseTo(honestMax, 9);
    expect(u?.costSource).toBe("estimated");
  });

  it("forged token counts stay JSON integers (capped at 2^53 - 1)", () => {
    const lines = claudeResult(1, 1e30, 1e30);
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(Number.isSafeInteger(u?.usage.inputTokens)).toBe(true);
    expect(JSON.stringify(u?.usage)).not.toContain("e+");
    expect(formatUsd(u?.costUsd ?? 0)).toMatch(COST_PATTERN);
  });
});

describe("a bill the agent cannot hide: no result line", () => {
  const assistant = (id: string, output: number) =>
    j({
      type: "assistant",
      message: { id, model: "claude-opus-5-5", usage: { input_tokens: 1000, output_tokens: output } },
    });

  it("claude's streamed responses are priced, each message once (the last line of its id)", () => {
    // claude prints a message once per content block: msg_1 twice, its usage growing.
    const lines = [assistant("msg_1", 10), assistant("msg_1", 50), assistant("msg_2", 100)].join("\n");
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(u?.fromMessages).toBe(2);
    expect(u?.usage).toEqual({
      inputTokens: 2000,
      outputTokens: 150,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    });
    expect(u?.costSource).toBe("estimated");
    expect(u?.costUsd).toBeCloseTo((2000 * 4 + 150 * 20) / 1e6, 9);
  });

  it("a result line wins over the streamed responses", () => {
    const lines = [assistant("msg_1", 50), claudeResult(0.01, 1000, 50)].join("\n");
    const u = runUsage({ vendor: "claude", execution: "interactive", model: "claude-opus-5-5", lines });
    expect(u?.fromMessages).toBeUndefined();
    expect(u?.costUsd).toBe(0.01);
  });
});

describe("model id forms priced as their alias (docs/cost-and-budgets.md#the-price-table)", () => {
  it.each([
    ["claude-haiku-4-5-20251001", "claude-haiku-4-5"],
    ["claude-opus-5-5[1m]", "claude-opus-5-5"],
    ["claude-opus-5-5-20260101[1m]", "claude-opus-5-5"],
    ["gpt-5-2025-08-07", "gpt-5"],
    ["gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"],
    ["gemini-2.5-flash-001", "gemini-2.5-flash"],
    ["anthropic/claude-sonnet-4-6", "claude-sonnet-4-6"],
  ])("%s → %s", (id, alias) => {
    expect(priceFor(id)).toBe(MODEL_PRICES[alias]);
  });

  it("an id the table lists is its own entry, never a shorter one", () => {
    expect(modelIdCandidates("gpt-5-mini")[0]).toBe("gpt-5-mini");
    expect(priceFor("gpt-5-mini")).toBe(MODEL_PRICES["gpt-5-mini"]);
  });

  it("an unknown model stays unpriced", () => {
    expect(priceFor("claude-unknown-9-20260101")).toBeUndefined();
  });
});
