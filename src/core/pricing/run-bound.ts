/**
 * A bill within bounds, never hidden (docs/cost-and-budgets.md#a-bill-within-bounds): the agent
 * prints the lines its tokens are read from, so a run's tokens are believed only up to what it
 * could have consumed in its wall time, and a run whose log was not read whole, or that spent time
 * but left no readable result, is charged that bound rather than what was left (or $0). Either is
 * flagged: costSource `bounded`, status.costNote, the CostBounded condition and Event. Pure.
 */
import type { Vendor } from "../cli/routing.js";
import { costAtRates, type TokenUsage } from "./estimate.js";
import type { PriceTable } from "./prices.js";
import type { RunUsage } from "./run-usage.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

/**
 * The most tokens one run consumes per second of its wall time, per kind: several times what one
 * CLI process is served even with sub-agents in parallel (a model streams a few hundred output
 * tokens a second per request; a request re-reads its context from the cache every few seconds),
 * so an honest run does not meet it, and a run charged at it is charged more than it spent.
 */
export const RUN_TOKENS_PER_SECOND: Readonly<TokenUsage> = Object.freeze({
  inputTokens: 50_000,
  outputTokens: 1_000,
  cacheReadTokens: 200_000,
  cacheWriteTokens: 50_000,
});

/** A run's time is counted as at least this long (a run that started and ended in the same second still ran). */
const MIN_RUN_SECONDS = 60;

/** Why a run was charged its bound. */
export type BoundReason = "above-bound" | "log-incomplete" | "result-unread";

/** The tokens a run of `seconds` could have consumed at most. */
export function runTokenBound(seconds: number): TokenUsage {
  const s = Math.max(MIN_RUN_SECONDS, Math.ceil(seconds));
  return {
    inputTokens: RUN_TOKENS_PER_SECOND.inputTokens * s,
    outputTokens: RUN_TOKENS_PER_SECOND.outputTokens * s,
    cacheReadTokens: RUN_TOKENS_PER_SECOND.cacheReadTokens * s,
    cacheWriteTokens: RUN_TOKENS_PER_SECOND.cacheWriteTokens * s,
  };
}

const KINDS = ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"] as const;

export interface BoundInput {
  vendor: Vendor;
  /** The run's wall time so far, seconds. */
  seconds: number;
  prices?: PriceTable;
  /** What the log's lines said (undefined: no usage in them, or no log). */
  usage: RunUsage | undefined;
  /** Why the read is not to be believed whole, when it is not; else undefined. */
  incomplete?: { reason: Exclude<BoundReason, "above-bound">; why: string };
}

export interface BoundedUsage {
  usage: RunUsage;
  /** status.costNote: what was charged and why. */
  note: string;
}

const usd = (n: number) => `$${n.toFixed(2)}`;

/** The most a run of `seconds` can cost: its token bound at the vendor's highest known rates. */
export function runBoundUsd(vendor: Vendor, seconds: number, prices: PriceTable = {}): number {
  return costAtRates(runTokenBound(seconds), vendorCeilingRates(vendor, prices));
}

/**
 * The usage to record when the bound applies; undefined when the run's own figure stands. Above
 * the bound, the tokens are cut to it per kind; incomplete or unread, the tokens read are kept as
 * they are (cut to the bound too). Either way costUSD is the bound: the most the run could have
 * cost, at its vendor's highest known rates.
 */
export function boundedUsage(input: BoundInput): BoundedUsage | undefined {
  const bound = runTokenBound(input.seconds);
  const read = input.usage?.usage;
  const above = read !== undefined && KINDS.some((k) => read[k] > bound[k]);
  if (!above && input.incomplete === undefined) return undefined;
  const boundUsd = runBoundUsd(input.vendor, input.seconds, input.prices);
  const tokens: TokenUsage = {
    inputTokens: Math.min(read?.inputTokens ?? 0, bound.inputTokens),
    outputTokens: Math.min(read?.outputTokens ?? 0, bound.outputTokens),
    cacheReadTokens: Math.min(read?.cacheReadTokens ?? 0, bound.cacheReadTokens),
    cacheWriteTokens: Math.min(read?.cacheWriteTokens ?? 0, bound.cacheWriteTokens),
  };
  const seconds = Math.max(MIN_RUN_SECONDS, Math.ceil(input.seconds));
  const charged = `charged the most a run of ${seconds} s can cost (${usd(boundUsd)} at the vendor's highest known rates)`;
  const why = above
    ? `the run's lines report more tokens than it could have consumed in its ${seconds} s (at most ${bound.outputTokens} output and ${bound.inputTokens} input tokens)`
    : (input.incomplete?.why ?? "");
  const { rejectedReportUsd, unpricedModels } = input.usage ?? {};
  return {
    usage: {
      usage: tokens,
      costUsd: boundUsd,
      costSource: "bounded",
      ...(rejectedReportUsd !== undefined ? { rejectedReportUsd } : {}),
      ...(unpricedModels !== undefined ? { unpricedModels } : {}),
    },
    note: `${why}: ${charged}`,
  };
}
