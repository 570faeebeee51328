/**
 * A Station's budget (docs/cost-and-budgets.md): the spend of its runs that ended within a rolling
 * window, from the entries the controller records in the Station's status (so pruned or deleted
 * Agents still count), and the decision whether a new run may start. Pure.
 */
import { formatUsd, parseUsd } from "../pricing/estimate.js";
import type { Station } from "../types.js";

export type SpendEntry = NonNullable<NonNullable<Station["status"]>["spend"]>[number];

/** The most entries status.spend holds (the CRD's maxItems); beyond, the oldest are merged. */
export const MAX_SPEND_ENTRIES = 256;

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90m`, `24h`, `30d` in milliseconds; undefined for anything else (the CRD schema refuses it). */
export function windowMs(window: string | undefined): number | undefined {
  const m = /^([1-9][0-9]*)(m|h|d)$/.exec(window ?? "");
  return m ? Number(m[1]) * (UNIT_MS[m[2] as string] as number) : undefined;
}

const at = (e: SpendEntry): number => {
  const t = Date.parse(e.completedAt);
  return Number.isNaN(t) ? 0 : t;
};

/** The entries that still count at `now`: ended after now − window. */
export function inWindow(entries: readonly SpendEntry[], window: number, now: number): SpendEntry[] {
  return entries.filter((e) => at(e) > now - window);
}

export type BudgetVerdict =
  | { state: "none" }
  | { state: "open"; spentUsd: number; limitUsd: number }
  | {
      state: "exhausted";
      spentUsd: number;
      limitUsd: number;
      window: string;
      /** When enough of the spend has left the window for the next run; undefined when never (limit 0). */
      freesAt?: number;
    };

/** Whether the Station's budget lets a new run start at `now`. */
export function budgetVerdict(station: Station | undefined, now: number): BudgetVerdict {
  const budget = station?.spec.budget;
  const window = windowMs(budget?.window);
  if (!budget || window === undefined) return { state: "none" };
  const limitUsd = Math.max(0, budget.limitUSD);
  const live = inWindow(station?.status?.spend ?? [], window, now).sort((a, b) => at(a) - at(b));
  // Summed in micro-dollars so that many small figures add up exactly.
  const micro = (e: SpendEntry) => Math.round(parseUsd(e.costUSD) * 1_000_000);
  const limitMicro = Math.round(limitUsd * 1_000_000);
  let spent = live.reduce((s, e) => s + micro(e), 0);
  const spentUsd = spent / 1_000_000;
  if (spent < limitMicro) return { state: "open", spentUsd, limitUsd };
  let freesAt: number | undefined;
  if (limitMicro > 0) {
    for (const e of live) {
      spent -= micro(e);
      if (spent < limitMicro) {
        freesAt = at(e) + window;
        break;
      }
    }
  }
  return {
    state: "exhausted",
    spentUsd,
    limitUsd,
    window: budget.window,
    ...(freesAt !== undefined ? { freesAt } : {}),
  };
}

/** The Ready condition's message (and the Event's note) for an Agent the budget holds. */
export function budgetMessage(
  stationName: string,
  v: Extract<BudgetVerdict, { state: "exhausted" }>,
  rfc3339: (ms: number) => string,
): string {
  const head = `budget of Station ${stationName} reached: $${formatUsd(v.spentUsd)} spent of $${formatUsd(v.limitUsd)} in the last ${v.window}`;
  return v.freesAt !== undefined
    ? `${head}; the run starts when the window frees room at ${rfc3339(v.freesAt)}`
    : `${head}; a limit of 0 holds every new run until the budget is raised`;
}

/**
 * status.spend after a run's entry is added: once per Agent uid (a re-reconcile that records the
 * same run again changes nothing), entries that left the window dropped, and beyond
 * MAX_SPEND_ENTRIES the oldest merged into one entry dated at the newest of them, which keeps
 * their money in the window a little longer rather than letting it leave too early.
 */
export function withSpend(
  entries: readonly SpendEntry[],
  entry: SpendEntry,
  window: number,
  now: number,
): SpendEntry[] | undefined {
  if (entry.agent && entries.some((e) => e.agent === entry.agent)) return undefined;
  const live = inWindow([...entries, entry], window, now).sort((a, b) => at(a) - at(b));
  if (live.length <= MAX_SPEND_ENTRIES) return live;
  const merged = live.slice(0, live.length - MAX_SPEND_ENTRIES + 1);
  const total = merged.reduce((s, e) => s + Math.round(parseUsd(e.costUSD) * 1_000_000), 0);
  const newest = merged[merged.length - 1] as SpendEntry;
  return [
    { agent: "", completedAt: newest.completedAt, costUSD: formatUsd(total / 1_000_000) },
    ...live.slice(merged.length),
  ];
}
