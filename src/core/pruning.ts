/** History pruning per Station (crds.md §2.3). */
import type { Agent, Station } from "./types.js";
import { phaseOf } from "./types.js";

const completed = (a: Agent): number => {
  const t = a.status?.completedAt;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};

function limitsOf(station: Station) {
  return {
    Succeeded: Math.max(0, station.spec.successfulRunsHistoryLimit ?? 3),
    Failed: Math.max(0, station.spec.failedRunsHistoryLimit ?? 3),
  } as const;
}

/** In a phase's history, `a` is kept before `b`: newer completedAt first, ties by name. */
const keptBefore = (a: Agent, b: Agent) =>
  completed(b) - completed(a) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");

const inHistory = (stationName: string | undefined, phase: "Succeeded" | "Failed") => (a: Agent) =>
  a.spec.stationRef === stationName && phaseOf(a) === phase && !a.metadata.deletionTimestamp;

/**
 * The Station's terminal Agents beyond its history limits: per phase, newest completedAt kept
 * (ties broken by name, so the result is stable). Pending and Running are never pruned, nor are
 * Agents already being deleted.
 */
export function agentsToPrune(station: Station, stationAgents: Agent[]): Agent[] {
  const limits = limitsOf(station);
  const victims: Agent[] = [];
  for (const phase of ["Succeeded", "Failed"] as const) {
    const group = stationAgents.filter(inHistory(station.metadata.name, phase)).sort(keptBefore);
    victims.push(...group.slice(limits[phase]));
  }
  return victims;
}

/**
 * True when this terminal Agent is itself beyond its Station's history limit, by the same order
 * as agentsToPrune. Lets every reconcile of a finished Agent repair the history (a failed prune
 * delete, a crash between the terminal patch and the prune, a lowered limit) in O(Station's
 * Agents), without sorting.
 */
export function beyondHistoryLimit(station: Station, stationAgents: Agent[], agent: Agent): boolean {
  const phase = phaseOf(agent);
  if ((phase !== "Succeeded" && phase !== "Failed") || agent.metadata.deletionTimestamp) return false;
  if (agent.spec.stationRef !== station.metadata.name) return false;
  const limit = limitsOf(station)[phase];
  const same = inHistory(station.metadata.name, phase);
  let keptAhead = 0;
  for (const other of stationAgents) {
    if (other.metadata.name === agent.metadata.name || !same(other)) continue;
    if (keptBefore(other, agent) < 0 && ++keptAhead >= limit) return true;
  }
  return keptAhead >= limit;
}
