/**
 * src/core/pricing/: what a run costs. The price table (prices.ts) and the installation's
 * overrides, a run's usage and its bill, the estimate a budget holds back, the ceiling a vendor's
 * plan sets.
 *
 * The price table the controller estimates a run's cost from when the vendor's CLI reports no cost
 * (codex, gemini, opencode on a model its catalog does not price) and for every batch run
 * (docs/cost-and-budgets.md). One entry per model id, in USD per million tokens, each with where
 * the figures come from and the date they were read. A model not listed is not priced: its run
 * reports tokens and no cost.
 *
 * The Anthropic batch lines' `total_cost_usd` has its own, narrower rule (src/batch/pricing.ts,
 * docs/cost-and-budgets.md): input and output only, exact ids. A test keeps the two tables' input and
 * output rates equal.
 */

/** USD per million tokens. */
export interface Rates {
  input: number;
  output: number;
  /** Input tokens read from the prompt cache. */
  cacheRead: number;
  /** Input tokens written to the prompt cache (Anthropic's 5-minute write; others bill them as input). */
  cacheWrite: number;
  /**
   * Input tokens written to Anthropic's one-hour cache (claude's `cache_creation.ephemeral_1h_input_tokens`):
   * twice the input rate. Absent: priced as cacheWrite.
   */
  cacheWrite1h?: number;
}

export interface ModelPrice {
  rates: Rates;
  /**
   * A higher tier for every token of a request whose prompt (input + cache read + cache write)
   * exceeds `aboveTokens`.
   */
  longPrompt?: { aboveTokens: number; rates: Rates };
  /**
   * Rates that replace `rates` from a date on (YYYY-MM-DD, UTC, inclusive), oldest first; the run's
   * time decides which apply (priceAt), never the machine's clock.
   */
  from?: readonly { date: string; rates: Rates }[];
  /** Where the figures were read. */
  source: string;
  /** When they were read (YYYY-MM or YYYY-MM-DD). */
  asOf: string;
  /**
   * The date the provider stopped serving the model (it refuses requests for it): kept for the
   * cost of runs before it; no example or doc may name it (test/repo/retired-models.test.ts).
   */
  retired?: string;
  /** The date the provider announced the model deprecated (still served, shutdown announced). */
  deprecated?: string;
  /**
   * Batch APIs halve cache-read tokens too (true, the default), or bill them at the cache rate
   * with no batch discount (false: Gemini, docs/cost-and-budgets.md#the-price-table).
   */
  batchDiscountsCacheReads?: boolean;
}

/** A model id to its price: the price overrides an installation sets (src/core/pricing/overrides.ts). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

const ANTHROPIC_SOURCE = "Anthropic list prices, platform.claude.com pricing page (docs/cost-and-budgets.md)";
const OPENAI_SOURCE = "OpenAI API pricing page, openai.com/api/pricing (standard tier)";
const GEMINI_SOURCE = "Gemini API pricing page, ai.google.dev/gemini-api/docs/pricing (paid tier)";

const r = (input: number, output: number, cacheRead: number, cacheWrite: number): Rates => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});
/** Anthropic: a one-hour cache write costs twice the input rate, a five-minute one 1.25 times. */
const a = (input: number, output: number, cacheRead: number, cacheWrite: number): Rates => ({
  ...r(input, output, cacheRead, cacheWrite),
  cacheWrite1h: input * 2,
});
const anthropic = (rates: Rates, extra: Partial<ModelPrice> = {}): ModelPrice => ({
  rates,
  source: ANTHROPIC_SOURCE,
  asOf: "2026-10",
  ...extra,
});
/**
 * Up to gpt-5.5, OpenAI bills no cache write: a written token is an input token. The gpt-5.6
 * family bills explicit cache writes (`input_tokens_details.cache_write_tokens`) at a rate of its
 * own, which no source we hold gives: it is not in this table (its tokens are priced at the
 * vendor's highest rates, docs/cost-and-budgets.md#no-run-is-free) until a price override adds it.
 */
const openai = (
  input: number,
  output: number,
  cacheRead: number,
  asOf: string,
  extra: Partial<ModelPrice> = {},
): ModelPrice => ({
  rates: r(input, output, cacheRead, input),
  source: OPENAI_SOURCE,
  asOf,
  ...extra,
});
/**
 * Gemini's implicit caching bills no write; storage of explicit caches is not a token price. Batch
 * does not halve cached tokens again (docs/cost-and-budgets.md#the-price-table).
 */
const gemini = (rates: Rates, asOf: string, extra: Partial<ModelPrice> = {}): ModelPrice => ({
  rates,
  source: GEMINI_SOURCE,
  asOf,
  batchDiscountsCacheReads: false,
  ...extra,
});
/**
 * Gemini 3.x pages list input and output; a cached token is priced at 10 % of input, Google's
 * documented context-caching ratio for every model of the table before it.
 */
const g = (input: number, output: number): Rates => r(input, output, input / 10, input);

export const MODEL_PRICES: Readonly<Record<string, ModelPrice>> = {
  // A later localized pricing page (read 2026-11) lists Fable 5.2 at 8 / 40, cache write 10.
  "claude-fable-5-2": anthropic(a(8, 40, 0.2, 10), { asOf: "2026-11" }),
  "claude-fable-5": anthropic(a(10, 50, 1, 12.5), { asOf: "2026-11" }),
  "claude-fable-5-1": anthropic(a(10, 50, 0.25, 12.5)),
  "claude-opus-5-5": anthropic(a(4, 20, 0.2, 5)),
  "claude-opus-5": anthropic(a(5, 25, 0.5, 6.25)),
  "claude-opus-4-8": anthropic(a(5, 25, 0.5, 6.25)),
  "claude-opus-4-7": anthropic(a(5, 25, 0.5, 6.25)),
  "claude-opus-4-6": anthropic(a(5, 25, 0.5, 6.25)),
  "claude-opus-4-5": anthropic(a(5, 25, 0.5, 6.25)),
  // Cache reads cut from 0.20 to 0.10 on 2026-10-07.
  "claude-sonnet-5-5": anthropic(a(2, 10, 0.1, 2.5)),
  "claude-sonnet-5": anthropic(a(2, 10, 0.2, 2.5)),
  "claude-sonnet-4-6": anthropic(a(3, 15, 0.3, 3.75)),
  // Retired by Anthropic on 2026-11-30: requests for it are refused.
  "claude-sonnet-4-5": anthropic(a(3, 15, 0.3, 3.75), { retired: "2026-11-30" }),
  "claude-sonnet-4": anthropic(a(3, 15, 0.3, 3.75)),
  "claude-haiku-5-5": anthropic(a(0.1, 0.5, 0.01, 0.125), {
    longPrompt: { aboveTokens: 100_000, rates: a(0.5, 2.5, 0.05, 0.625) },
  }),
  "claude-haiku-4-5": anthropic(a(1, 5, 0.1, 1.25)),
  "gpt-5": openai(1.25, 10, 0.125, "2025-08"),
  "gpt-5-mini": openai(0.25, 2, 0.025, "2025-08"),
  // Deprecated by OpenAI (shutdown announced; still served).
  "gpt-5-nano": openai(0.05, 0.4, 0.005, "2025-08", { deprecated: "2026-11" }),
  // Shut down by OpenAI: requests for it are refused.
  "gpt-5-codex": openai(1.25, 10, 0.125, "2025-09", { retired: "2026-11" }),
  // Deprecated by OpenAI (shutdown announced; still served).
  "gpt-5.1": openai(1.25, 10, 0.125, "2025-11", { deprecated: "2026-11" }),
  "gpt-5.1-codex": openai(1.25, 10, 0.125, "2025-11"),
  "gpt-5.2": openai(1.75, 14, 0.175, "2026-11"),
  "gpt-5.2-codex": openai(1.75, 14, 0.175, "2026-11"),
  "gpt-5.3-codex": openai(1.75, 14, 0.175, "2026-11"),
  // Every token of a request above 272k input tokens at the higher tier.
  "gpt-5.4": openai(2.5, 15, 0.25, "2026-11", {
    longPrompt: { aboveTokens: 272_000, rates: r(5, 22.5, 0.5, 5) },
  }),
  "gpt-5.4-mini": openai(0.75, 4.5, 0.075, "2026-11"),
  "gpt-5.4-nano": openai(0.2, 1.25, 0.02, "2026-11"),
  "gpt-5.5": openai(5, 30, 0.5, "2026-11", {
    longPrompt: { aboveTokens: 272_000, rates: r(10, 45, 1, 10) },
  }),
  o3: openai(2, 8, 0.5, "2025-06"),
  "o4-mini": openai(1.1, 4.4, 0.275, "2025-04"),
  "gemini-2.5-pro": gemini(r(1.25, 10, 0.125, 1.25), "2025-10", {
    longPrompt: { aboveTokens: 200_000, rates: r(2.5, 15, 0.25, 2.5) },
  }),
  "gemini-2.5-flash": gemini(r(0.3, 2.5, 0.03, 0.3), "2025-10"),
  "gemini-2.5-flash-lite": gemini(r(0.1, 0.4, 0.01, 0.1), "2025-10"),
  "gemini-3.1-pro-preview": gemini(g(2, 12), "2026-11", {
    longPrompt: { aboveTokens: 200_000, rates: g(4, 18) },
  }),
  "gemini-3.5-flash": gemini(g(1.5, 9), "2026-11"),
  "gemini-3.5-flash-lite": gemini(g(0.3, 2.5), "2026-11"),
  // An introductory rate until 2026-12-31, the list rate from 2027-01-01.
  "gemini-3.8-flash": gemini(g(0.75, 3.75), "2026-11", {
    from: [{ date: "2027-01-01", rates: g(1.5, 7.5) }],
  }),
};

/** Snapshot and variant suffixes that carry the same price as the id without them. */
const SUFFIXES: readonly RegExp[] = [
  /\[1m\]$/, // Claude Code's 1M-context ids: claude-opus-5-5[1m]
  /-\d{8}$/, // Anthropic snapshots: claude-haiku-4-5-20251001
  /-\d{4}-\d{2}-\d{2}$/, // OpenAI snapshots: gpt-5-2025-08-07
  /-\d{3}$/, // Gemini stable versions: gemini-2.5-flash-001
  /-preview(-\d{2}-\d{4}|-\d{2}-\d{2})?$/, // Gemini previews: gemini-2.5-flash-preview-09-2025
];

/**
 * The ids a reported model id may be priced as, most specific first: itself, without a
 * `provider/` prefix (opencode's `anthropic/claude-sonnet-4-6`), then without each snapshot or
 * variant suffix in turn (so `claude-opus-5-5-20260101[1m]` reaches `claude-opus-5-5`).
 */
export function modelIdCandidates(model: string): string[] {
  const out: string[] = [];
  const bare = model.includes("/") ? model.slice(model.lastIndexOf("/") + 1) : model;
  for (const id of [model, bare]) {
    let current = id;
    out.push(current);
    for (let changed = true; changed; ) {
      changed = false;
      for (const suffix of SUFFIXES) {
        const next = current.replace(suffix, "");
        if (next !== current && next !== "") {
          current = next;
          out.push(current);
          changed = true;
        }
      }
    }
  }
  return [...new Set(out)];
}

/** The rates of a table entry at a time (epoch ms, the run's); the first rates when no time is given. */
export function ratesAt(price: ModelPrice, at: number | undefined): Rates {
  let rates = price.rates;
  if (at === undefined) return rates;
  for (const change of price.from ?? [])
    if (at >= Date.parse(`${change.date}T00:00:00Z`)) rates = change.rates;
  return rates;
}

/**
 * A table's own entry for an id; never what its prototype carries. The ids come from the agent's
 * log and the author's spec.model: `constructor` or `__proto__` is an unknown model, not
 * Object's function (docs/cost-and-budgets.md).
 */
export function ownEntry<T>(table: Readonly<Record<string, T>>, id: string): T | undefined {
  return Object.hasOwn(table, id) ? table[id] : undefined;
}

/**
 * The table entry for a model id as a CLI or provider reports it (modelIdCandidates); for each
 * candidate id, the installation's override first, then the built-in table.
 */
export function priceFor(model: string, overrides: PriceTable = {}): ModelPrice | undefined {
  for (const id of modelIdCandidates(model)) {
    const price = ownEntry(overrides, id) ?? ownEntry(MODEL_PRICES, id);
    if (price !== undefined) return price;
  }
  return undefined;
}
