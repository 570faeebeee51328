/**
 * src/core/station-limits/: a Station's share. Who may start now and who waits (concurrency.ts),
 * the spend its runs may still make (budget.ts), which finished Agents it keeps (pruning.ts).
 *
 * Station concurrency (docs/reconcile.md#concurrency-and-pruning, docs/decisions.md D-14, D-15, D-16): who may start now, who waits, whom Replace
 * deletes. Reads only the cache plus the creations issued but not yet observed.
 */
import type { Agent, Station } from "../types.js";
import { phaseOf } from "../types.js";

export type Admission =
  | { kind: "start"; preempt: Agent[] }
  | { kind: "wait"; why: "queue" | "full" | "preempt-unavailable" };

/** 0 = unlimited (Allow only); Forbid and Replace cap at one run (docs/decisions.md D-14). */
export function effectiveLimit(station: Station): number {
  const policy = station.spec.concurrencyPolicy ?? "Allow";
  if (policy === "Forbid" || policy === "Replace") return 1;
  return Math.max(0, Math.trunc(station.spec.maxConcurrentRuns ?? 0));
}

const time = (t: string | Date | undefined): number => (t === undefined ? 0 : new Date(t).getTime() || 0);

/** Queue order (docs/decisions.md D-15): oldest creationTimestamp first, then name. */
export function queueOrder(a: Agent, b: Agent): number {
  return (
    time(a.metadata.creationTimestamp) - time(b.metadata.creationTimestamp) ||
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")
  );
}

/** Replace victims: oldest status.startedAt first, then name. */
function startOrder(a: Agent, b: Agent): number {
  return (
    time(a.status?.startedAt) - time(b.status?.startedAt) ||
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")
  );
}

/** The Station's Running runs other than `self`, counting creations issued but not yet observed. */
export function runningOthers(
  self: string,
  stationAgents: Agent[],
  pendingCreations: string[],
): {
  cached: Agent[];
  count: number;
} {
  const cached = stationAgents.filter((a) => a.metadata.name !== self && phaseOf(a) === "Running");
  const seen = new Set(stationAgents.filter((a) => phaseOf(a) !== "Pending").map((a) => a.metadata.name));
  const unseen = new Set(pendingCreations.filter((n) => n !== self && !seen.has(n)));
  return { cached, count: cached.length + unseen.size };
}

/** Whether a Pending Agent may start now. */
export function admit(
  agent: Agent,
  station: Station,
  stationAgents: Agent[],
  pendingCreations: string[],
): Admission {
  const self = agent.metadata.name ?? "";
  const limit = effectiveLimit(station);
  const { cached, count } = runningOthers(self, stationAgents, pendingCreations);
  const issued = new Set(pendingCreations);
  // Older Agents of the same Station still waiting for a slot go first.
  const ahead = stationAgents.filter(
    (a) =>
      a.metadata.name !== self &&
      phaseOf(a) === "Pending" &&
      !a.metadata.deletionTimestamp &&
      !issued.has(a.metadata.name ?? "") &&
      queueOrder(a, agent) < 0,
  ).length;
  if (limit === 0) return { kind: "start", preempt: [] };
  if (count + ahead < limit) return { kind: "start", preempt: [] };
  const policy = station.spec.concurrencyPolicy ?? "Allow";
  if (policy !== "Replace") return { kind: "wait", why: ahead > 0 ? "queue" : "full" };
  if (ahead > 0) return { kind: "wait", why: "queue" };
  const excess = count - limit + 1;
  const victims = [...cached].sort(startOrder).slice(0, excess);
  // A run the cache has not shown Running yet cannot be deleted with a precondition: wait.
  if (victims.length < excess) return { kind: "wait", why: "preempt-unavailable" };
  return { kind: "start", preempt: victims };
}

/** docs/decisions.md D-16: a batch fallback Job starts when the Station's other Running runs are below the limit. */
export function fallbackHasSlot(
  agent: Agent,
  station: Station,
  stationAgents: Agent[],
  pendingCreations: string[],
): boolean {
  const limit = effectiveLimit(station);
  if (limit === 0) return true;
  return runningOthers(agent.metadata.name ?? "", stationAgents, pendingCreations).count < limit;
}

/** Where a waiting Agent stands in its Station's queue (docs/decisions.md D-15 order), for its Queued condition. */
export interface QueuePosition {
  /** 1-based; the Agent at 1 starts at the next free slot. */
  position: number;
  /** Agents of the Station waiting for a slot, this one included. */
  waiting: number;
  /** Running runs counted against the limit (issued-but-unseen creations included). */
  running: number;
  /** The effective limit (0 = unlimited). */
  limit: number;
}

/** The queue as `admit` sees it: Pending, not being deleted, no creation issued for it. */
export function queuePosition(
  agent: Agent,
  station: Station,
  stationAgents: Agent[],
  pendingCreations: string[],
): QueuePosition {
  const self = agent.metadata.name ?? "";
  const issued = new Set(pendingCreations);
  const others = stationAgents.filter(
    (a) =>
      a.metadata.name !== self &&
      phaseOf(a) === "Pending" &&
      !a.metadata.deletionTimestamp &&
      !issued.has(a.metadata.name ?? ""),
  );
  return {
    position: 1 + others.filter((a) => queueOrder(a, agent) < 0).length,
    waiting: 1 + others.length,
    running: runningOthers(self, stationAgents, pendingCreations).count,
    limit: effectiveLimit(station),
  };
}
