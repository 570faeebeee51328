/**
 * A Station's budget while its runs are still running (docs/gateway.md#budgets-in-flight): what the
 * model gateway may still let a request spend. The Station's recorded spend (runs that ended, as in
 * ./budget.ts) plus, from the gateway's usage records (ModelUsage, one per run and gateway
 * process), what its running runs have spent so far and what requests in flight have reserved.
 * Pure: the gateway gathers the records and the Station, this decides.
 */
import { formatUsd } from "../pricing/estimate.js";
import type { Station } from "../types.js";
import { budgetVerdict, inWindow, windowMs } from "./budget.js";

/** One usage record's share, as the gateway reads it from a ModelUsage object. */
export interface RecordedRunSpend {
  agentUid: string;
  /** What its metered calls cost (the gateway's prices). */
  meteredUsd: number;
  /** What requests in flight have reserved and not yet settled. */
  reservedUsd: number;
  /** When its process last wrote it (epoch ms); NaN when unknown. */
  updatedAt: number;
}

export interface InFlightBudget {
  limitUsd: number;
  window: string;
  /** Runs that ended within the window (the Station's status.spend). */
  endedUsd: number;
  /** Runs not yet in status.spend: metered so far. */
  runningUsd: number;
  /** Requests in flight, of live gateway processes. */
  reservedUsd: number;
}

/**
 * A process that has not rewritten its record for this long is gone (it rewrites every minute
 * while it holds reservations): its reservations no longer count, its metered calls still do.
 */
export const RESERVATION_STALE_MS = 150_000;

/** The Station's budget and what is committed against it now; undefined when it has no budget. */
export function inFlightBudget(
  station: Station | undefined,
  records: readonly RecordedRunSpend[],
  now: number,
): InFlightBudget | undefined {
  const budget = station?.spec.budget;
  const window = windowMs(budget?.window);
  if (!budget || window === undefined) return undefined;
  const verdict = budgetVerdict(station, now);
  const endedUsd = verdict.state === "none" ? 0 : verdict.spentUsd;
  // A run whose spend the controller recorded is counted there (by its uid), not twice.
  const recorded = new Set(inWindow(station?.status?.spend ?? [], window, now).map((e) => e.agent ?? ""));
  let runningMicro = 0;
  let reservedMicro = 0;
  for (const r of records) {
    const fresh = Number.isFinite(r.updatedAt) && now - r.updatedAt < window;
    if (!recorded.has(r.agentUid) && fresh) runningMicro += micro(r.meteredUsd);
    if (Number.isFinite(r.updatedAt) && now - r.updatedAt < RESERVATION_STALE_MS)
      reservedMicro += micro(r.reservedUsd);
  }
  return {
    limitUsd: Math.max(0, budget.limitUSD),
    window: budget.window,
    endedUsd,
    runningUsd: runningMicro / 1_000_000,
    reservedUsd: reservedMicro / 1_000_000,
  };
}

const micro = (usd: number) => (Number.isFinite(usd) && usd > 0 ? Math.round(usd * 1_000_000) : 0);

/**
 * Whether everything committed (the request's own reservation included, as the gateway writes it
 * before it asks) fits the limit; the refusal the CLI prints when it does not.
 */
export function admitRequest(
  b: InFlightBudget,
  ids: { namespace: string; station: string },
  requestUsd: number,
  why: string,
): { ok: true } | { ok: false; message: string } {
  const committed = micro(b.endedUsd) + micro(b.runningUsd) + micro(b.reservedUsd);
  if (committed <= micro(b.limitUsd)) return { ok: true };
  const others = (committed - micro(requestUsd)) / 1_000_000;
  return {
    ok: false,
    message: `gateway: budget of Station ${ids.namespace}/${ids.station} reached: $${formatUsd(others)} spent or reserved of $${formatUsd(b.limitUsd)} in the last ${b.window}, and this request may cost up to $${formatUsd(requestUsd)} (${why}); refused`,
  };
}
