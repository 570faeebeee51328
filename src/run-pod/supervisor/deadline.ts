/**
 * The supervisor's clock for one run (docs/run-pod.md#deadlines). The agent is stopped at
 * `agentAt`: AGENT_DEADLINE_AT (the Job's creation + the agent's share, on the controller's
 * clock) or the supervisor's start + AGENT_DEADLINE_MS, whichever comes first. Everything after
 * the agent (its stop, file events, conversation save, terminal event, sink drain, exit-code
 * file) must be done by `reportBy` = `agentAt` + AGENT_TAIL_MS, before the Job's own deadline
 * kills the pod; each of those steps gets a share of what is left.
 */
import type { JsonLineLogger } from "../../log.js";
import type { SupervisorSettings } from "./settings.js";

/** Kept back from every share for the terminal event, the exit-code file and the exit itself. */
export const EXIT_RESERVE_MS = 1000;
/** A stop (SIGTERM, grace, SIGKILL, grace) and the EOF wait take at most this part of the tail. */
const STOP_SHARE = 0.4;

export interface RunDeadline {
  /** Epoch ms at which the agent is stopped; undefined = no deadline. */
  agentAt?: number;
  /** Epoch ms by which the result must be reported; undefined = no bound. */
  reportBy?: number;
  /** Grace between SIGTERM, SIGKILL and giving up when the deadline stops the agent. */
  stopGraceMs: number;
  /** The wait for the agent's pipes to close after it ended. */
  eofWaitMs: number;
}

export function runDeadline(
  settings: Pick<SupervisorSettings, "deadlineMs" | "deadlineAt" | "tailMs" | "graceMs">,
  startedAt: number,
  eofWaitMs: number,
): RunDeadline {
  const candidates = [
    settings.deadlineMs === undefined ? undefined : startedAt + settings.deadlineMs,
    settings.deadlineAt,
  ].filter((t): t is number => t !== undefined);
  const stopBudget = settings.tailMs * STOP_SHARE;
  // Two graces and the EOF wait fit in the stop's share of the tail.
  const stopGraceMs = Math.max(1, Math.min(settings.graceMs, Math.floor(stopBudget / 2.5)));
  const eof = Math.max(1, Math.min(eofWaitMs, Math.floor(stopBudget / 5)));
  if (candidates.length === 0) return { stopGraceMs: settings.graceMs, eofWaitMs };
  const agentAt = Math.min(...candidates);
  return { agentAt, reportBy: agentAt + settings.tailMs, stopGraceMs, eofWaitMs: eof };
}

/**
 * A SIGTERM means the pod is going away: the kubelet kills the container after its termination
 * grace (30 s unless the Station's template says otherwise), so from now on the report must be
 * done within AGENT_TAIL_MS (default 30 s) too, whatever the deadline.
 */
export function reportWithinTail(deadline: RunDeadline, now: number, tailMs: number): void {
  deadline.reportBy = Math.min(deadline.reportBy ?? Number.POSITIVE_INFINITY, now + tailMs);
}

/**
 * How long a tail step may take: at most `max`, and at most `part` of the time left before
 * `reportBy` less the exit reserve (never negative). No `reportBy` ⇒ `max`.
 */
export function tailShare(deadline: RunDeadline, now: number, max: number, part = 1): number {
  if (deadline.reportBy === undefined) return max;
  const left = deadline.reportBy - EXIT_RESERVE_MS - now;
  return Math.max(0, Math.min(max, Math.floor(left * part)));
}

/** One line at the start, so a run's deadline and its share of the Job's time are visible. */
export function logDeadline(
  deadline: RunDeadline,
  settings: Pick<SupervisorSettings, "deadlineMs" | "deadlineAt" | "tailMs">,
  log: JsonLineLogger,
): void {
  if (deadline.agentAt === undefined) return;
  log.info(
    `deadline: the agent is stopped at ${new Date(deadline.agentAt).toISOString()} and the result reported by ${new Date(deadline.reportBy ?? deadline.agentAt).toISOString()}`,
    {
      AGENT_DEADLINE_MS: settings.deadlineMs ?? "",
      AGENT_DEADLINE_AT: settings.deadlineAt ?? "",
      AGENT_TAIL_MS: settings.tailMs,
      stopGraceMs: deadline.stopGraceMs,
    },
  );
}
