/**
 * Token counts and the cost the price table gives them (docs/cost-and-budgets.md). Pure.
 *
 * `inputTokens` are the input tokens neither read from nor written to the prompt cache, so each
 * token is counted in exactly one of the four fields and priced at its own rate.
 */
import { type ModelPrice, type PriceTable, priceFor, type Rates, ratesAt } from "./prices.js";

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * Tokens as priced: `cacheWrite1hTokens` are the part of `cacheWriteTokens` written to Anthropic's
 * one-hour cache (priced at `cacheWrite1h`). Not in status.usage, which keeps the four kinds.
 */
export interface PricedUsage extends TokenUsage {
  cacheWrite1hTokens?: number;
}

export const NO_TOKENS: TokenUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}

export const totalTokens = (u: TokenUsage): number =>
  u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;

/** Batch APIs bill half the standard price (docs/cost-and-budgets.md). */
export const BATCH_DISCOUNT = 0.5;

function ratesFor(price: ModelPrice, u: TokenUsage, at: number | undefined): Rates {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return price.longPrompt !== undefined && prompt > price.longPrompt.aboveTokens
    ? price.longPrompt.rates
    : ratesAt(price, at);
}

/** USD for tokens at the given rates (per million tokens). */
export function costAtRates(u: PricedUsage, rates: Rates): number {
  const oneHour = Math.min(u.cacheWrite1hTokens ?? 0, u.cacheWriteTokens);
  const perMillion =
    u.inputTokens * rates.input +
    u.outputTokens * rates.output +
    u.cacheReadTokens * rates.cacheRead +
    (u.cacheWriteTokens - oneHour) * rates.cacheWrite +
    oneHour * (rates.cacheWrite1h ?? rates.cacheWrite);
  return perMillion / 1_000_000;
}

/**
 * USD for one request's (or one turn's) tokens of `model`, at the batch discount when `batch`, at
 * the rates in force at `at` (epoch ms: the run's time, injected), the installation's `overrides`
 * first; undefined when the table has no
 * price for the model. The long-prompt tier is decided per call of this function, so callers price
 * one request at a time where the lines report one (docs/cost-and-budgets.md#the-price-table).
 */
export function estimateCostUsd(
  model: string,
  u: PricedUsage,
  batch = false,
  at?: number,
  overrides: PriceTable = {},
): number | undefined {
  const price = priceFor(model, overrides);
  if (price === undefined) return undefined;
  const rates = ratesFor(price, u, at);
  if (!batch) return costAtRates(u, rates);
  if (price.batchDiscountsCacheReads !== false) return costAtRates(u, rates) * BATCH_DISCOUNT;
  // Cached tokens keep the cache rate in a batch (docs/cost-and-budgets.md#the-price-table).
  const cached = costAtRates({ ...NO_TOKENS, cacheReadTokens: u.cacheReadTokens }, rates);
  return costAtRates({ ...u, cacheReadTokens: 0 }, rates) * BATCH_DISCOUNT + cached;
}

/**
 * status.costUSD: a decimal string, rounded to a millionth of a dollar, without trailing zeros
 * ("0.0106", "12", "0"). A string because Kubernetes API conventions avoid floats in resources and
 * clients in other languages must read the exact figure that was summed.
 */
export function formatUsd(usd: number): string {
  // Integer micro-dollars in a BigInt, the whole dollars converted apart from the fraction: a
  // Number past 1e21 prints in exponent form ("1e+21"), which the CRD's pattern refuses, and
  // usd * 1e6 overflows to Infinity near Number.MAX_VALUE.
  const finite = Number.isFinite(usd) && usd > 0 ? usd : 0;
  const dollars = Math.floor(finite);
  const micro = BigInt(dollars) * 1_000_000n + BigInt(Math.round((finite - dollars) * 1_000_000));
  const whole = micro / 1_000_000n;
  const frac = String(micro % 1_000_000n)
    .padStart(6, "0")
    .replace(/0+$/, "");
  return frac === "" ? String(whole) : `${whole}.${frac}`;
}

/** A status.costUSD string back to a number; 0 for anything that is not one. */
export function parseUsd(text: unknown): number {
  if (typeof text === "number") return Number.isFinite(text) && text > 0 ? text : 0;
  if (typeof text !== "string" || !/^\d+(\.\d+)?$/.test(text)) return 0;
  return Number(text);
}
