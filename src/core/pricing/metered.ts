/**
 * A gateway run's tokens and cost from what the model gateway metered of its calls (ModelUsage
 * objects, one per run and gateway process; docs/gateway.md#metering), never from the run's own
 * lines, which the agent writes. Pure.
 */
import type { GatewayVendor } from "../run-job/gateway-credential.js";
import type { ModelUsageSpec, ModelUsageTokens } from "../types.js";
import { addUsage, costAtRates, estimateCostUsd, NO_TOKENS, type PricedUsage } from "./estimate.js";
import type { PriceTable } from "./prices.js";
import type { RunUsage } from "./run-usage.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

/** A run's metered calls: the sum of its ModelUsage objects (one per gateway process that served it). */
export interface MeteredRun {
  calls: number;
  incompleteCalls: number;
  /** Tokens per model, summed over the objects; sorted by model. */
  models: ModelUsageTokens[];
}

export const NOTHING_METERED: MeteredRun = Object.freeze({ calls: 0, incompleteCalls: 0, models: [] });

/** Sums the ModelUsage objects of one run. */
export function sumMetered(specs: readonly ModelUsageSpec[]): MeteredRun {
  const byModel = new Map<string, ModelUsageTokens>();
  let calls = 0;
  let incompleteCalls = 0;
  for (const s of specs) {
    calls += s.calls;
    incompleteCalls += s.incompleteCalls ?? 0;
    for (const m of s.models) {
      byModel.set(m.model, addModelTokens(m.model, byModel.get(m.model), m));
    }
  }
  const models = [...byModel.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  return { calls, incompleteCalls, models };
}

/** One model's tokens with more of them added: the four kinds and the one-hour cache writes. */
export function addModelTokens(
  model: string,
  had: ModelUsageTokens | undefined,
  more: PricedUsage,
): ModelUsageTokens {
  const oneHour = (had?.cacheWrite1hTokens ?? 0) + (more.cacheWrite1hTokens ?? 0);
  return {
    model,
    ...addUsage(had ?? NO_TOKENS, more),
    ...(oneHour > 0 ? { cacheWrite1hTokens: oneHour } : {}),
  };
}

/** The CLI vendor whose price-table ceiling bounds a model the table has no price for. */
const CEILING_VENDOR = { anthropic: "claude", openai: "codex", gemini: "gemini" } as const;

export interface MeteredPricing {
  vendor: GatewayVendor;
  /** The run's time (epoch ms): the rates in force then. */
  at: number;
  prices?: PriceTable;
}

/**
 * status.usage and status.costUSD of a metered run: each model's tokens at its own price, a model
 * the table has no price for at its vendor's highest known rates (listed in unpricedModels, as for
 * any run: docs/cost-and-budgets.md#no-run-is-free). Gateway calls are never batch calls, so no
 * discount. Nothing metered is a run that cost nothing: the gateway saw no call.
 */
export function meteredRunUsage(run: MeteredRun, pricing: MeteredPricing): RunUsage {
  let usage = NO_TOKENS;
  let cost = 0;
  const unpriced: string[] = [];
  for (const m of run.models) {
    const tokens: PricedUsage = {
      inputTokens: m.inputTokens,
      outputTokens: m.outputTokens,
      cacheReadTokens: m.cacheReadTokens,
      cacheWriteTokens: m.cacheWriteTokens,
      ...(m.cacheWrite1hTokens !== undefined ? { cacheWrite1hTokens: m.cacheWrite1hTokens } : {}),
    };
    usage = addUsage(usage, tokens);
    const priced = estimateCostUsd(m.model, tokens, false, pricing.at, pricing.prices ?? {});
    if (priced !== undefined) {
      cost += priced;
      continue;
    }
    unpriced.push(m.model);
    cost += costAtRates(tokens, vendorCeilingRates(CEILING_VENDOR[pricing.vendor], pricing.prices ?? {}));
  }
  return {
    usage,
    costUsd: cost,
    costSource: "metered",
    ...(unpriced.length > 0 ? { unpricedModels: unpriced } : {}),
  };
}

/** Whether the status already records exactly this metered usage (a later record changes it). */
export function sameUsage(
  a:
    | { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number }
    | undefined,
  b: RunUsage["usage"],
): boolean {
  return (
    (a?.inputTokens ?? 0) === b.inputTokens &&
    (a?.outputTokens ?? 0) === b.outputTokens &&
    (a?.cacheReadTokens ?? 0) === b.cacheReadTokens &&
    (a?.cacheWriteTokens ?? 0) === b.cacheWriteTokens
  );
}

/**
 * How long the controller waits, after a gateway run's Job finished, for calls the gateway still
 * reads (a client that went away mid-answer: the gateway reads the answer to its end and meters
 * it). Past it the run is priced without them and status.costNote says so.
 */
export const METERING_WAIT_MS = 15 * 60_000;
/**
 * A gateway process rewrites a run's object at least every minute while it has calls of the run in
 * flight (src/gateway/usage-store.ts); an object not rewritten for this long is a process that is
 * gone, whose in-flight calls will never be recorded.
 */
export const IN_FLIGHT_STALE_MS = 150_000;

export type MeteringState =
  | { state: "settled" }
  /** Calls are still being read by a live gateway process: wait for their record. */
  | { state: "wait"; calls: number }
  /** Calls were in flight, but their process is gone or the wait is over: price without them. */
  | { state: "unsettled"; calls: number };

/** Whether a finished gateway run's metered usage is whole (docs/gateway.md#metering). */
export function meteringState(
  specs: readonly ModelUsageSpec[],
  jobFinishedAt: number | undefined,
  now: number,
): MeteringState {
  let live = 0;
  let stale = 0;
  for (const s of specs) {
    const n = s.inFlight ?? 0;
    if (n === 0) continue;
    const updated = s.updatedAt === undefined ? Number.NaN : Date.parse(s.updatedAt);
    if (Number.isFinite(updated) && now - updated < IN_FLIGHT_STALE_MS) live += n;
    else stale += n;
  }
  if (live === 0 && stale === 0) return { state: "settled" };
  const waited = now - (jobFinishedAt ?? now);
  if (live > 0 && waited < METERING_WAIT_MS) return { state: "wait", calls: live };
  return { state: "unsettled", calls: live + stale };
}
