/** History pruning per Station (docs/reconcile.md#concurrency-and-pruning). */
import type { Agent, Station } from "../types.js";
import { phaseOf } from "../types.js";

const completed = (a: Agent): number => {
  const t = a.status?.completedAt;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};
const created = (a: Agent): number => {
  const t = a.metadata.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};

function limitsOf(station: Station) {
  return {
    Succeeded: Math.max(0, station.spec.successfulRunsHistoryLimit ?? 3),
    Failed: Math.max(0, station.spec.failedRunsHistoryLimit ?? 3),
  } as const;
}

/**
 * In a phase's history, `a` is kept before `b`: newer completedAt first. completedAt has whole
 * seconds, so runs that finished in the same second are ordered by the newer creation first (the
 * later run is kept, as it would be with finer times), then by name, so the order is stable.
 */
const keptBefore = (a: Agent, b: Agent) =>
  completed(b) - completed(a) ||
  created(b) - created(a) ||
  (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");

const inHistory = (stationName: string | undefined, phase: "Succeeded" | "Failed") => (a: Agent) =>
  a.spec.stationRef === stationName && phaseOf(a) === phase && !a.metadata.deletionTimestamp;

/**
 * The Station's terminal Agents beyond its history limits: per phase, newest completedAt kept
 * (ties by newer creation, then name: `keptBefore`). Pending and Running are never pruned, nor are
 * Agents already being deleted.
 */
export function agentsToPrune(station: Station, stationAgents: readonly Agent[]): Agent[] {
  const limits = limitsOf(station);
  const victims: Agent[] = [];
  for (const phase of ["Succeeded", "Failed"] as const) {
    // Each completedAt parsed once, not once per comparison (a Station may hold thousands).
    const group = stationAgents
      .filter(inHistory(station.metadata.name, phase))
      .map((a) => ({ a, t: completed(a), c: created(a), name: a.metadata.name ?? "" }));
    group.sort((x, y) => y.t - x.t || y.c - x.c || x.name.localeCompare(y.name));
    for (const g of group.slice(limits[phase])) victims.push(g.a);
  }
  return victims;
}

/**
 * One Station's history as computed for one list of its Agents. The controller hands the core the
 * same (frozen) list until one of the Station's Agents changes, so a poll that reconciles every
 * finished Agent computes it once per Station instead of scanning the Station once per Agent.
 * Keyed by the list's identity: the lists and Stations passed in are never modified.
 */
interface History {
  station: Station;
  members: Set<Agent>;
  victims: Set<Agent>;
}
const histories = new WeakMap<readonly Agent[], History>();

function historyOf(station: Station, stationAgents: readonly Agent[]): History {
  let h = histories.get(stationAgents);
  if (h?.station !== station) {
    h = { station, members: new Set(stationAgents), victims: new Set(agentsToPrune(station, stationAgents)) };
    histories.set(stationAgents, h);
  }
  return h;
}

/**
 * True when this terminal Agent is itself beyond its Station's history limit, by the same order
 * as agentsToPrune. Lets every reconcile of a finished Agent repair the history (a failed prune
 * delete, a crash between the terminal patch and the prune, a lowered limit) in O(Station's
 * Agents), without sorting.
 */
export function beyondHistoryLimit(station: Station, stationAgents: readonly Agent[], agent: Agent): boolean {
  const phase = phaseOf(agent);
  if ((phase !== "Succeeded" && phase !== "Failed") || agent.metadata.deletionTimestamp) return false;
  if (agent.spec.stationRef !== station.metadata.name) return false;
  const history = historyOf(station, stationAgents);
  if (history.members.has(agent)) return history.victims.has(agent);
  // An Agent that is not in the list (a test, a fresher copy): count it in by hand.
  const limit = limitsOf(station)[phase];
  const same = inHistory(station.metadata.name, phase);
  let keptAhead = 0;
  for (const other of stationAgents) {
    if (other.metadata.name === agent.metadata.name || !same(other)) continue;
    if (keptBefore(other, agent) < 0 && ++keptAhead >= limit) return true;
  }
  return keptAhead >= limit;
}
