/**
 * What a failed Job creation means for the Agent (docs/decisions.md D-101): a refusal for good fails it
 * with the API server's message; a transient failure makes it wait for a backoff (or the server's
 * Retry-After) and say why, as a `reportWaiting` action that the Ready condition and a Kubernetes
 * Event show.
 */
import type { ReportWaitingAction } from "../actions.js";
import type { JobCreateFailure } from "../input.js";
import type { AgentRef } from "../types.js";

/** First wait after a transiently failed Job creation; doubles per attempt up to JOB_CREATE_RETRY_MAX_MS. */
export const JOB_CREATE_RETRY_BASE_MS = 2_000;
export const JOB_CREATE_RETRY_MAX_MS = 5 * 60_000;
/** A retry never comes sooner than this, whatever Retry-After says. */
const MIN_RETRY_MS = 1_000;

/**
 * When a transiently failed Job creation may be tried again: the API server's Retry-After when it
 * sent one, else exponential backoff from JOB_CREATE_RETRY_BASE_MS.
 */
export function jobCreateRetryAt(f: JobCreateFailure): number {
  const backoff = Math.min(
    JOB_CREATE_RETRY_BASE_MS * 2 ** Math.max(0, f.attempts - 1),
    JOB_CREATE_RETRY_MAX_MS,
  );
  return f.at + Math.max(f.retryAfterMs ?? backoff, MIN_RETRY_MS);
}

/** failureReason of a Job creation the API server refused for good; quotes its message. */
export function jobCreateRefusedReason(f: JobCreateFailure): string {
  return `Job creation refused: ${f.message}`;
}

/** Why the Agent waits while a Job creation backs off; `at` formats the retry time. */
export function jobCreateWaiting(
  agent: AgentRef,
  f: JobCreateFailure,
  at: (ms: number) => string,
): ReportWaitingAction {
  const retryAt = jobCreateRetryAt(f);
  return {
    id: "report-waiting",
    type: "reportWaiting",
    agent,
    reason: "JobCreateRetrying",
    message: `Job creation failed (attempt ${f.attempts}), retrying at ${at(retryAt)}: ${f.message}`,
    retryAt,
  };
}
