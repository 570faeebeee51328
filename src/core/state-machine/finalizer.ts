/**
 * Finalizer rules, run only while the Agent carries agents.re-cinq.com/batch-cleanup: release it
 * when there is nothing to clean up, count each cleanup outcome once, cancel an owed batch before
 * cleaning it up, and otherwise wait. This is the only work a terminal Agent can still get.
 */
import { isTerminal } from "../types.js";
import { cancelAction, cleanupAction, patch, removeFinalizer } from "./builders.js";
import type { Ctx, Rule } from "./context.js";
import {
  batchFinished,
  cancelOwed,
  cleanupDue,
  cleanupStuck,
  disabledInFlight,
  submitFailure,
} from "./facts.js";
import { MAX_CLEANUP_ATTEMPTS } from "./timing.js";

export const releaseBatchDisabled: Rule = {
  id: "release-batch-disabled",
  from: "any",
  to: "same",
  when: "finalizer present, BATCH_ENABLED=false (and not failing an in-flight batch in this pass)",
  does: "remove the finalizer without provider calls (the batch is left to expire)",
  guard: (c) => !c.input.settings.batchEnabled && !disabledInFlight(c),
  act: (c) => [removeFinalizer(c)],
};

export const releaseNoBatch: Rule = {
  id: "release-no-batch",
  from: "any",
  to: "same",
  when: "finalizer present, no batch was ever submitted, and the Agent is terminal or deleted",
  does: "remove the finalizer; an input file a failed submit uploaded (OpenAI) is deleted first, best effort",
  guard: (c) => !c.batchId && (isTerminal(c.phase) || c.deleting),
  act: (c) => {
    const fileId = submitFailure(c)?.inputFileId;
    if (fileId === undefined || !c.provider || !c.apiKey) return [removeFinalizer(c)];
    return [
      {
        id: "discard-upload",
        type: "discardUpload",
        agent: c.ref,
        provider: c.provider,
        fileId,
        apiKey: c.apiKey,
      },
      removeFinalizer(c),
    ];
  },
};

/**
 * The attempt of this pass failed before it could see the batch settled while the batch is known
 * to be settling (its cancel was confirmed, or the last cleanup found it not settled): even a
 * successful read would have said "not yet", so the try is not a failure: the 5 attempts count no
 * try made while the batch is still settling (docs/batch-runs.md#timeouts-delete-limits), unless
 * the batch is stuck (48 h).
 */
function stillSettling(c: Ctx): boolean {
  const r = c.input.batch.cleanupResult;
  return (
    r?.state === "failed" && r.settleUnseen === true && c.input.batch.settling === true && !cleanupStuck(c)
  );
}

export const cleanupDone: Rule = {
  id: "cleanup-done",
  from: "any",
  to: "same",
  when: "the cleanup attempt of this pass reported done",
  does: "remove the finalizer",
  guard: (c) => c.input.batch.cleanupResult?.state === "done",
  act: (c) => [removeFinalizer(c)],
};

export const cleanupFailed: Rule = {
  id: "cleanup-failed",
  from: "any",
  to: "same",
  when: "the cleanup attempt of this pass failed (other than before seeing a settling batch settled), its cancel failed on delete, or it is unsettled 48 h after startedAt",
  does: "patch batchCleanupAttempts + 1 (phase untouched); count controller_batch_cleanup_failures_total; at 5 remove the finalizer anyway",
  guard: (c) => {
    const r = c.input.batch.cleanupResult;
    return (
      (r?.state === "failed" && !stillSettling(c)) ||
      // docs/decisions.md D-103: on delete a cancel that fails (revoked or removed key, outage) is a failed attempt.
      (r?.state === "cancel_failed" && (c.deleting || cleanupStuck(c))) ||
      (r?.state === "not_settled" && cleanupStuck(c))
    );
  },
  act: (c) => {
    const attempts = (c.agent.status?.batchCleanupAttempts ?? 0) + 1;
    return [
      patch(c, { batchCleanupAttempts: attempts }, "patch-cleanup-attempts"),
      // The attempt failed whether or not the count could be written.
      {
        id: "metric-cleanup-failure",
        type: "recordMetric",
        metric: { name: "controller_batch_cleanup_failures_total" },
      },
      ...(attempts >= MAX_CLEANUP_ATTEMPTS ? [removeFinalizer(c, ["patch-cleanup-attempts"])] : []),
    ];
  },
};

export const cleanupNotSettled: Rule = {
  id: "cleanup-not-settled",
  from: "any",
  to: "same",
  when: "the cleanup attempt of this pass found the batch not settled yet, or failed reading whether a settling batch has settled, or the timeout's cancel failed (Agent not deleted; within 48 h of startedAt)",
  does: "nothing; not a failure, retried 15 s (or the provider's Retry-After) later",
  guard: (c) =>
    ["not_settled", "cancel_failed"].includes(c.input.batch.cleanupResult?.state ?? "") || stillSettling(c),
  act: () => [],
};

export const releaseNoProvider: Rule = {
  id: "release-no-provider",
  from: "any",
  to: "same",
  when: "cleanup is due but the AgentDefinition or its API key entry is gone",
  does: "remove the finalizer (no key, no provider call possible)",
  guard: (c) => batchFinished(c) && (!c.apiKey || !c.provider),
  act: (c) => [removeFinalizer(c)],
};

export const cancelThenCleanup: Rule = {
  id: "cancel-then-cleanup",
  from: "any",
  to: "same",
  when: "a cancel is owed and not yet confirmed (the Agent was deleted while its batch was in flight, or the batch timed out), no try in the last 15 s",
  does: "cancelBatch, then cleanupBatch (Gemini: the DELETE only after the cancel went through)",
  guard: (c) => cancelOwed(c) && cleanupDue(c),
  act: (c) => [cancelAction(c), cleanupAction(c, ["cancel-batch"])],
};

export const cleanup: Rule = {
  id: "cleanup",
  from: "any",
  to: "same",
  when: "batch finished (terminal, timed out into fallback, or Agent deleted) and no cleanup in the last 15 s",
  does: "cleanupBatch",
  guard: (c) => batchFinished(c) && cleanupDue(c),
  act: (c) => [cleanupAction(c)],
};

export const finalizerWait: Rule = {
  id: "finalizer-wait",
  from: "any",
  to: "same",
  when: "otherwise (batch in flight, or cleanup retried too recently)",
  does: "nothing",
  guard: () => true,
  act: () => [],
};
