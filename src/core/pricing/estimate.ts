/**
 * Token counts and the cost the price table gives them (docs/cost-and-budgets.md). Pure.
 *
 * `inputTokens` are the input tokens neither read from nor written to the prompt cache, so each
 * token is counted in exactly one of the four fields and priced at its own rate.
 */
import { type ModelPrice, priceFor, type Rates } from "./prices.js";

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
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

function ratesFor(price: ModelPrice, u: TokenUsage): Rates {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return price.longPrompt !== undefined && prompt > price.longPrompt.aboveTokens
    ? price.longPrompt.rates
    : price.rates;
}

/** USD for tokens at the given rates (per million tokens). */
export function costAtRates(u: TokenUsage, rates: Rates): number {
  const perMillion =
    u.inputTokens * rates.input +
    u.outputTokens * rates.output +
    u.cacheReadTokens * rates.cacheRead +
    u.cacheWriteTokens * rates.cacheWrite;
  return perMillion / 1_000_000;
}

/**
 * USD for one request's (or one turn's) tokens of `model`, at the batch discount when `batch`;
 * undefined when the table has no price for the model. The long-prompt tier is decided per call
 * of this function, so callers price one request or turn at a time where the lines allow it.
 */
export function estimateCostUsd(model: string, u: TokenUsage, batch = false): number | undefined {
  const price = priceFor(model);
  if (price === undefined) return undefined;
  return costAtRates(u, ratesFor(price, u)) * (batch ? BATCH_DISCOUNT : 1);
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
