/**
 * src/core/state-machine/: the Agent state machine. reconcile (reconcile.ts) runs the rule tables
 * in order; each phase's rules sit in their own file (pending.ts, running-job.ts, running-batch.ts,
 * terminal.ts, finalizer.ts), with what they share (context.ts, facts.ts, builders.ts, timing.ts).
 *
 * The Agent state machine, its rule order on one screen: `reconcile(input)` is a pure function from one
 * plain-data snapshot (see `../input.ts`) to a list of plain-data actions (see `../actions.ts`).
 *
 * Structure. Two rule tables are evaluated in order, the first matching rule of each wins:
 * - PHASE_RULES move the Agent through Pending → Running → Succeeded | Failed. They do not run
 *   for an Agent that is being deleted (its Job is garbage-collected with it) and do nothing for
 *   a terminal Agent: terminal → terminal is a no-op.
 * - FINALIZER_RULES run only while the Agent carries agents.re-cinq.com/batch-cleanup: cancel
 *   and delete the provider batch, count failed cleanups, release the finalizer. This is the
 *   only work a terminal Agent can still get.
 * Each rule is a named constant in the module of its group, beside its tests, under
 * `state-machine/`: `terminal.ts`, `pending.ts`, `running-batch.ts`, `running-job.ts`,
 * `finalizer.ts`. Their words come from `context.ts` (the context every rule reads), `facts.ts`
 * (the predicates shared by several groups), `builders.ts` (actions) and `timing.ts` (clock math).
 * `docs/state-machine.md` is rendered from these same tables (`codegen/state-machine-doc.ts`).
 *
 * Batch I/O is two-phase. The core never calls a provider; it asks for a call (submitBatch,
 * pollBatch, cancelBatch, cleanupBatch) and the executor performs it, writes the outcome into
 * its per-Agent `BatchMemory` and reconciles again (the "same pass"), now with the result as
 * input. So:
 * - submit: Pending → [addFinalizer, submitBatch]; next call, with `batch.submitted`, patches
 *   Running (batchId, batchProvider, startedAt) and sends agent/started. The submit is not
 *   repeated while its result is remembered, even if the patch conflicts (docs/decisions.md D-50).
 * - poll: asked for at most every BATCH_POLL_SECONDS (`batch.lastPollAt`); an ended
 *   `batch.pollResult` completes the run. When the timeout has passed, one final poll is asked
 *   for first, so a result arriving in the same pass wins over the timeout.
 * - cleanup: `batch.cleanupResult` is one-shot; each outcome is counted exactly once.
 * The executor records each provider result with the time it got it and reconciles again at once;
 * the core never asks for the same provider call again within MIN_POLL_GAP_MS (poll) or
 * CLEANUP_RETRY_MS (cleanup), and never re-submits a remembered submit, so that follow-up loop
 * ends (submit → patch, poll → patch, cleanup → finalizer).
 *
 * Clock: `input.now` only. Randomness: none.
 */
import type { Action } from "../actions.js";
import { report } from "../events/report.js";
import type { ReconcileInput } from "../input.js";
import { context, type Rule } from "./context.js";
import { hasFinalizer } from "./facts.js";
import {
  cancelThenCleanup,
  cleanup,
  cleanupDone,
  cleanupFailed,
  cleanupNotSettled,
  finalizerWait,
  releaseBatchDisabled,
  releaseNoBatch,
  releaseNoProvider,
} from "./finalizer.js";
import {
  batchSubmit,
  batchSubmitBackoff,
  batchSubmitRejected,
  batchSubmitted,
  budgetExhausted,
  definitionMissing,
  invalid,
  jobCreate,
  jobCreateBackoff,
  jobCreateRefused,
  providerHold,
  stationMissing,
  unbuildable,
  waitForSlot,
} from "./pending.js";
import {
  batchDisabled,
  batchFinalPoll,
  batchPending,
  batchPoll,
  batchResult,
  batchTimeoutFail,
  batchTimeoutFallback,
  batchWaitDefinition,
  fallbackStart,
  fallbackWait,
} from "./running-batch.js";
import { jobFinished, jobGc, jobRunning, jobUnobserved, podNeverStarts } from "./running-job.js";
import { terminalNoop, terminalPrune } from "./terminal.js";
import { rfc3339 } from "./timing.js";

export {
  containedReconcile,
  DEFAULT_RECONCILE_ERROR_TRIES,
  MSG_RECONCILE_FAILED,
  type ReconcileFailure,
} from "./contained.js";
export type { Rule } from "./context.js";
export { isSettled, settledAgentsWithWork } from "./terminal.js";

/** The first rule whose guard holds decides the phase transition; the order is the specification. */
export const PHASE_RULES: readonly Rule[] = [
  // Succeeded | Failed
  terminalPrune,
  terminalNoop,
  // Pending
  stationMissing,
  definitionMissing,
  invalid,
  batchSubmitted,
  batchSubmitRejected,
  batchSubmitBackoff,
  unbuildable,
  budgetExhausted,
  waitForSlot,
  providerHold,
  batchSubmit,
  jobCreateRefused,
  jobCreateBackoff,
  jobCreate,
  // Running, a provider batch (or its fallback before the Job exists)
  batchDisabled,
  batchResult,
  batchWaitDefinition,
  batchFinalPoll,
  batchTimeoutFail,
  batchTimeoutFallback,
  batchPoll,
  batchPending,
  fallbackStart,
  fallbackWait,
  // Running, a Job
  jobUnobserved,
  podNeverStarts,
  jobRunning,
  jobGc,
  jobFinished,
];

/** While the batch-cleanup finalizer is on the Agent, the first finalizer rule whose guard holds runs too. */
export const FINALIZER_RULES: readonly Rule[] = [
  releaseBatchDisabled,
  releaseNoBatch,
  cleanupDone,
  cleanupFailed,
  cleanupNotSettled,
  releaseNoProvider,
  cancelThenCleanup,
  cleanup,
  finalizerWait,
];

export interface Decision {
  /** Ids of the rules that fired (phase rule first, then finalizer rule). */
  rules: string[];
  actions: Action[];
}

/** The rules that fire for this input and the actions they produce. */
export function decide(input: ReconcileInput): Decision {
  const c = context(input);
  const rules: string[] = [];
  const actions: Action[] = [];
  if (!c.deleting) {
    const rule = PHASE_RULES.find((r) => r.guard(c));
    if (rule) {
      rules.push(rule.id);
      actions.push(...rule.act(c));
    }
  }
  if (hasFinalizer(c) && !actions.some((a) => a.type === "removeFinalizer")) {
    const rule = FINALIZER_RULES.find((r) => r.guard(c)) as Rule;
    rules.push(rule.id);
    actions.push(...rule.act(c));
  }
  return { rules, actions };
}

/** The reconcile function: one Agent's input snapshot → the actions for the I/O layer. */
export function reconcile(input: ReconcileInput): Action[] {
  // The rules' decision, plus status.conditions and Kubernetes Events (../events/report.ts).
  return report(input, decide(input), rfc3339(input.now));
}
