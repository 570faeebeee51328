/**
 * Phase rules for a Succeeded or Failed Agent: terminal → terminal is a no-op, except repairing the
 * Station's history when this Agent is beyond its limit. `isSettled` / `settledAgentsWithWork` let the
 * controller's poll answer that question per Station without reconciling every settled Agent.
 */
import { agentsToPrune, beyondHistoryLimit } from "../station-limits/pruning.js";
import { type Agent, isTerminal, phaseOf, type Station } from "../types.js";
import type { Rule } from "./context.js";

export const terminalPrune: Rule = {
  id: "terminal-prune",
  from: "Succeeded|Failed",
  to: "deleted",
  when: "the Agent is terminal and beyond its Station's history limit (a prune delete that failed, a crash between the terminal patch and the prune, a lowered limit)",
  does: "delete this Agent (resourceVersion precondition), so the next poll repairs the history",
  guard: (c) =>
    isTerminal(c.phase) && !!c.station && beyondHistoryLimit(c.station, c.input.stationAgents, c.agent),
  act: (c) => [
    {
      id: `prune-${c.ref.name}`,
      type: "deleteAgent",
      agent: c.ref,
      resourceVersion: c.rv,
      reason: "prune",
    },
  ],
};

export const terminalNoop: Rule = {
  id: "terminal-noop",
  from: "Succeeded|Failed",
  to: "same",
  when: "the Agent is terminal",
  does: "nothing: terminal → terminal is a no-op",
  guard: (c) => isTerminal(c.phase),
  act: () => [],
};

/**
 * A finished Agent that carries no finalizer and is not being deleted. Of all the rules only
 * `terminal-prune` and `terminal-noop` can match it, so its reconcile has work exactly when it is
 * beyond its Station's history limit. The controller caches it slimmed (transform.ts), and its
 * poll asks `settledAgentsWithWork` once per Station instead of reconciling each such Agent:
 * with thousands of runs in history that is most of a poll's CPU (docs/decisions.md D-116).
 */
export function isSettled(agent: Agent): boolean {
  return (
    isTerminal(phaseOf(agent)) && !agent.metadata?.deletionTimestamp && !agent.metadata?.finalizers?.length
  );
}

/**
 * The settled Agents among a Station's Agents whose reconcile would do something (delete them:
 * `terminal-prune`). The property test holds it equal to running `reconcile` on each of them.
 */
export function settledAgentsWithWork(station: Station, stationAgents: readonly Agent[]): Agent[] {
  return agentsToPrune(station, stationAgents).filter(isSettled);
}
