/**
 * How long a run may take and how its deadline is shared out between the agent, the supervisor's
 * report and the courier (docs/run-pod.md#deadlines).
 */
import type { Station } from "../types.js";

/** Deadline in minutes, clamped to at least 1; default 30. */
export function deadlineMinutesOf(station: Station): number {
  return Math.max(1, Math.trunc(station.spec.deadlineMinutes ?? 30));
}

/** Time the supervisor keeps after the agent's deadline to report (stop, save, terminal event, drain). */
export const TAIL_MARGIN_MS = 30_000;
/** Time the courier keeps after that to deliver. */
export const COURIER_MARGIN_MS = 120_000;

/**
 * How a run's deadline is shared out (docs/run-pod.md#deadlines): the agent runs for `agentMs`,
 * then the supervisor has `tailMs` to report its result and, with delivery, the courier
 * `courierMs` to push, all inside the Job's `jobMs`. The margins are 30 s and 120 s; when they
 * would leave the agent less than half the Job's time, the agent gets half and the margins share
 * the other half in their 30 : 120 proportion (`shared`), so a short deadline is never shrunk to
 * nothing.
 */
export interface DeadlineBudget {
  jobMs: number;
  agentMs: number;
  tailMs: number;
  courierMs: number;
  shared: boolean;
}

export function deadlineBudget(deadlineMinutes: number, delivery: boolean): DeadlineBudget {
  const jobMs = deadlineMinutes * 60_000;
  const courierMargin = delivery ? COURIER_MARGIN_MS : 0;
  const margins = TAIL_MARGIN_MS + courierMargin;
  if (jobMs - margins >= jobMs / 2) {
    return {
      jobMs,
      agentMs: jobMs - margins,
      tailMs: TAIL_MARGIN_MS,
      courierMs: courierMargin,
      shared: false,
    };
  }
  const agentMs = Math.ceil(jobMs / 2);
  const tailMs = Math.floor(((jobMs - agentMs) * TAIL_MARGIN_MS) / margins);
  return { jobMs, agentMs, tailMs, courierMs: jobMs - agentMs - tailMs, shared: true };
}

/** AGENT_DEADLINE_MS: the agent's share of the Job's deadline (deadlineBudget). */
export function agentDeadlineMs(deadlineMinutes: number, delivery: boolean): number {
  return deadlineBudget(deadlineMinutes, delivery).agentMs;
}
