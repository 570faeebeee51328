/** Facts the rules are written in: small predicates over the context, shared by several groups. */
import { DEFAULT_BATCH_MODEL } from "../cli/routing.js";
import { isTerminal } from "../types.js";
import type { Ctx } from "./context.js";
import {
  CLEANUP_RETRY_MS,
  CLEANUP_STUCK_MS,
  DEFAULT_BATCH_TIMEOUT_MINUTES,
  MIN_POLL_GAP_MS,
} from "./timing.js";

/** failureReason of a batch its timeout stopped (a fallback that cannot start says why after it). */
export const MSG_BATCH_TIMED_OUT = "batch timed out";

export const hasFinalizer = (c: Ctx) => c.finalizerIndex >= 0;
export const isBatchRun = (c: Ctx) => !!c.agent.status?.batchId;
export const onFallback = (c: Ctx) => c.agent.status?.batchFallback === true;
export const hasJob = (c: Ctx) => !!c.agent.status?.jobName;
/** A Running run that is (still) a provider batch rather than a Job. */
export const batchInFlight = (c: Ctx) => c.phase === "Running" && isBatchRun(c) && !onFallback(c);
/** A Running run whose outcome comes from a Job (ordinary, realtime, or a started fallback). */
export const jobRun = (c: Ctx) => c.phase === "Running" && (!isBatchRun(c) || (onFallback(c) && hasJob(c)));
export const polledEnded = (c: Ctx) => c.input.batch.pollResult?.state === "ended";

export function timeoutAt(c: Ctx): number | undefined {
  if (c.startedAt === undefined) return undefined;
  const minutes =
    c.recorded?.timeoutMinutes ?? c.definition?.spec.batch?.timeoutMinutes ?? DEFAULT_BATCH_TIMEOUT_MINUTES;
  return c.startedAt + minutes * 60_000;
}
export const timedOut = (c: Ctx) => {
  const at = timeoutAt(c);
  return at !== undefined && c.now >= at;
};
export const finalPollDone = (c: Ctx) => {
  const at = timeoutAt(c);
  const last = c.input.batch.lastPollAt;
  return at !== undefined && last !== undefined && last >= at;
};
export const pollDue = (c: Ctx) => {
  const last = c.input.batch.lastPollAt;
  // The floor keeps the follow-up reconcile of the same pass from polling again at BATCH_POLL_SECONDS=0.
  const gap = Math.max(c.input.settings.batchPollSeconds * 1000, MIN_POLL_GAP_MS);
  return last === undefined || c.now - last >= gap;
};
export const onTimeout = (c: Ctx) => c.recorded?.onTimeout ?? c.definition?.spec.batch?.onTimeout ?? "fail";
export const batchModel = (c: Ctx) => c.recorded?.model || c.model || DEFAULT_BATCH_MODEL;
/** Provider calls of the finalizer (and retried cancels) are spaced by 15 s, or the provider's Retry-After. */
export const cleanupSpacingOver = (c: Ctx) => {
  const last = c.input.batch.lastCleanupAt;
  const gap = Math.max(CLEANUP_RETRY_MS, c.input.batch.cleanupRetryAfterMs ?? 0);
  return last === undefined || c.now - last >= gap;
};
export const cleanupDue = (c: Ctx) => c.input.batch.cleanupResult === undefined && cleanupSpacingOver(c);
/** The batch stopped by a timeout: failed with `batch timed out…`, or handed over to a fallback Job. */
export const timedOutRun = (c: Ctx) =>
  onFallback(c) ||
  (c.phase === "Failed" && (c.agent.status?.failureReason ?? "").startsWith(MSG_BATCH_TIMED_OUT));
/**
 * A cancel is owed until the provider confirmed one (docs/decisions.md D-102): the batch timed out, or the
 * Agent was deleted before its batch ended. A batch that ended with its result needs none.
 */
export const cancelOwed = (c: Ctx) =>
  !!c.batchId &&
  c.input.batch.cancelledAt === undefined &&
  ((c.deleting && !isTerminal(c.phase)) || timedOutRun(c));
export const submitFailure = (c: Ctx) => c.input.batch.submitFailure;
/** The finalizer's work has started: the batch result is in, it timed out, or the Agent is deleted. */
export const batchFinished = (c: Ctx) => isTerminal(c.phase) || onFallback(c) || c.deleting;
export const disabledInFlight = (c: Ctx) => !c.input.settings.batchEnabled && !c.deleting && batchInFlight(c);
export const cleanupStuck = (c: Ctx) => c.startedAt !== undefined && c.now >= c.startedAt + CLEANUP_STUCK_MS;
