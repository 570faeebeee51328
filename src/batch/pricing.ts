/**
 * total_cost_usd for a Claude batch run: half the standard per-token price (the batch discount)
 * of the input and output tokens. Cache tokens are not priced. Model ids match exactly; an id
 * not in the table (a dated snapshot, a future model) costs 0.
 *
 * The table and its date live here and nowhere else.
 */

/** Anthropic list prices as of this month (docs/cost-and-budgets.md#the-price-table). */
export const PRICE_TABLE_DATE = "2026-10";

/** US cents per million tokens, so the arithmetic stays in integers until the last division. */
interface Rate {
  input: number;
  output: number;
}

interface ModelPrice {
  standard: Rate;
  /** Higher rate for every token of a request with more than `aboveTokens` input tokens. */
  longPrompt?: { aboveTokens: number; rate: Rate };
}

const rate = (input: number, output: number): Rate => ({ input, output });

export const ANTHROPIC_PRICES: Readonly<Record<string, ModelPrice>> = {
  // Fable 5.2 and Fable 5 read 2026-11 (src/core/pricing/prices.ts).
  "claude-fable-5-2": { standard: rate(800, 4000) },
  "claude-fable-5": { standard: rate(1000, 5000) },
  "claude-fable-5-1": { standard: rate(1000, 5000) },
  "claude-opus-5-5": { standard: rate(400, 2000) },
  "claude-opus-5": { standard: rate(500, 2500) },
  "claude-opus-4-8": { standard: rate(500, 2500) },
  "claude-opus-4-7": { standard: rate(500, 2500) },
  "claude-opus-4-6": { standard: rate(500, 2500) },
  "claude-opus-4-5": { standard: rate(500, 2500) },
  "claude-sonnet-5-5": { standard: rate(200, 1000) },
  "claude-sonnet-5": { standard: rate(200, 1000) },
  "claude-sonnet-4-6": { standard: rate(300, 1500) },
  "claude-sonnet-4-5": { standard: rate(300, 1500) },
  "claude-sonnet-4": { standard: rate(300, 1500) },
  "claude-haiku-5-5": {
    standard: rate(10, 50),
    longPrompt: { aboveTokens: 100_000, rate: rate(50, 250) },
  },
  "claude-haiku-4-5": { standard: rate(100, 500) },
};

export interface BilledUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** Batch discount: half of the standard price. */
const BATCH_DIVISOR = 2;
const CENTS_PER_USD = 100;
const TOKENS_PER_UNIT = 1_000_000;

export function batchCostUsd(model: string, usage: BilledUsage): number {
  // The id is the author's: only the table's own entries price it (`constructor` is unknown: 0).
  const price = Object.hasOwn(ANTHROPIC_PRICES, model) ? ANTHROPIC_PRICES[model] : undefined;
  if (price === undefined) return 0;
  // The seed's rule is "more than 100,000 input tokens": the tier is decided by input_tokens
  // alone, cache reads and writes not included (docs/decisions.md D-113).
  const r =
    price.longPrompt !== undefined && usage.input_tokens > price.longPrompt.aboveTokens
      ? price.longPrompt.rate
      : price.standard;
  const cents = usage.input_tokens * r.input + usage.output_tokens * r.output;
  return cents / (CENTS_PER_USD * TOKENS_PER_UNIT * BATCH_DIVISOR);
}
