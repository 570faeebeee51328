/** History pruning per Station (crds.md §2.3). */
import type { Agent, Station } from "./types.js";
import { phaseOf } from "./types.js";

const completed = (a: Agent): number => {
  const t = a.status?.completedAt;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};

/**
 * The Station's terminal Agents beyond its history limits: per phase, newest completedAt kept
 * (ties broken by name, so the result is stable). Pending and Running are never pruned, nor are
 * Agents already being deleted.
 */
export function agentsToPrune(station: Station, stationAgents: Agent[]): Agent[] {
  const stationName = station.metadata.name;
  const limits = {
    Succeeded: Math.max(0, station.spec.successfulRunsHistoryLimit ?? 3),
    Failed: Math.max(0, station.spec.failedRunsHistoryLimit ?? 3),
  } as const;
  const victims: Agent[] = [];
  for (const phase of ["Succeeded", "Failed"] as const) {
    const group = stationAgents
      .filter(
        (a) => a.spec.stationRef === stationName && phaseOf(a) === phase && !a.metadata.deletionTimestamp,
      )
      .sort(
        (a, b) => completed(b) - completed(a) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
      );
    victims.push(...group.slice(limits[phase]));
  }
  return victims;
}
