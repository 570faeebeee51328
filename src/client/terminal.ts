/** Pure readings of an Agent's status that callers of the client and the plugin share. */
import type { Agent, AgentCondition } from "../../generated/crds/agent.js";

export type AgentPhase = NonNullable<NonNullable<Agent["status"]>["phase"]>;

/** The phase, an absent one read as Pending, as the prompt API does (docs/prompt-api.md#status-codes). */
export function phaseOf(agent: Agent): AgentPhase {
  return agent.status?.phase ?? "Pending";
}

export function isTerminal(agent: Agent): boolean {
  const phase = phaseOf(agent);
  return phase === "Succeeded" || phase === "Failed";
}

/**
 * The exit code a terminal Agent stands for: status.exitCode, else 0 for Succeeded and 1 for
 * Failed (an Agent that failed before its process ran, e.g. `Station x not found`, has none).
 */
export function exitCodeOf(agent: Agent): number {
  const code = agent.status?.exitCode;
  if (Number.isInteger(code)) return code as number;
  return phaseOf(agent) === "Succeeded" ? 0 : 1;
}

export function conditionOf(agent: Agent, type: string): AgentCondition | undefined {
  return agent.status?.conditions?.find((c) => c.type === type);
}

export interface QueuePlace {
  /** 1-based; for a place beyond the controller's detail limit, the limit itself. */
  position: number;
  /** How many wait in all; undefined beyond the detail limit. */
  waiting: number | undefined;
  /** The condition's message as the controller wrote it. */
  message: string;
}

/**
 * Where a waiting Agent stands in its Station's queue, from the Queued condition's message
 * (`… position 2 of 5 in its queue …` or `… beyond position 20 …`, src/core/events/conditions.ts).
 */
export function queuePlaceOf(agent: Agent): QueuePlace | undefined {
  const queued = conditionOf(agent, "Queued");
  if (queued?.status !== "True") return undefined;
  const exact = /position (\d+) of (\d+)/.exec(queued.message);
  if (exact) return { position: Number(exact[1]), waiting: Number(exact[2]), message: queued.message };
  const beyond = /beyond position (\d+)/.exec(queued.message);
  if (beyond) return { position: Number(beyond[1]), waiting: undefined, message: queued.message };
  return undefined;
}

/**
 * Why the Agent is where it is: status.failureReason (on a Succeeded run, a partial read-back),
 * else, unless the run succeeded, the reason and message of the condition that explains the wait
 * or the failure (Queued, then Ready when False); "" when nothing does. A Succeeded run's
 * `Ready=False Succeeded: the run has finished` (src/core/events/conditions.ts) only repeats the phase.
 */
export function reasonOf(agent: Agent): string {
  const failure = agent.status?.failureReason ?? "";
  if (failure !== "" || phaseOf(agent) === "Succeeded") return failure;
  for (const type of ["Queued", "Ready"]) {
    const c = conditionOf(agent, type);
    const explains = type === "Queued" ? c?.status === "True" : c?.status === "False";
    if (c && explains) return c.message ? `${c.reason}: ${c.message}` : c.reason;
  }
  return "";
}
