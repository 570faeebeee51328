/**
 * Phase rules for a Running batch run: a controller with batch disabled fails it; a polled result
 * finishes it (winning over a timeout in the same pass); a timeout polls once more, then fails the
 * run or hands it to a fallback Job; otherwise it is polled when due. A fallback waiting for a
 * Station slot starts its Job here too.
 */

import type { Action, ApiKeyRef, PatchStatusAction, SinkItem } from "../actions.js";
import type { BatchProviderName } from "../batch-port.js";
import type { ReconcileInput } from "../input.js";
import { MSG_BATCH_DISABLED } from "../policy/spec-checks.js";
import { capOutput } from "../readback/output.js";
import { buildJob } from "../run-job/job.js";
import { jobNameFor } from "../run-job/names.js";
import { fallbackHasSlot } from "../station-limits/concurrency.js";
import type { AgentDefinition, Station } from "../types.js";
import {
  cancelAction,
  fail,
  finish,
  lifecycle,
  patch,
  removeFinalizer,
  sinkEvents,
  usageOf,
} from "./builders.js";
import type { Ctx, Rule } from "./context.js";
import {
  batchInFlight,
  batchModel,
  cleanupSpacingOver,
  disabledInFlight,
  finalPollDone,
  hasFinalizer,
  hasJob,
  MSG_BATCH_TIMED_OUT,
  onFallback,
  onTimeout,
  pollDue,
  polledEnded,
  timedOut,
} from "./facts.js";

function pollAction(c: Ctx): Action {
  return {
    id: "poll-batch",
    type: "pollBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    batchId: c.batchId as string,
    apiKey: c.apiKey as ApiKeyRef,
    ctx: { agentUid: c.ref.uid, model: batchModel(c) },
  };
}

/**
 * The timeout's cancel, unless one already succeeded or one failed less than 15 s ago: a watch
 * event can reconcile the cached Agent again before the timeout patch is visible, and the provider
 * needs the request only once. A failed one is retried by the finalizer until confirmed.
 */
function timeoutCancel(c: Ctx): Action[] {
  return c.input.batch.cancelledAt === undefined && cleanupSpacingOver(c) ? [cancelAction(c)] : [];
}

/**
 * The Job a timed-out batch falls back to (always interactive), as the action that creates it and
 * its name; both the timeout itself and a fallback that waited for a Station slot start it.
 */
function createFallbackJob(
  c: Ctx,
): { ok: true; create: Action; jobName: string } | { ok: false; reason: string } {
  const built = buildJob(
    c.agent,
    c.station as Station,
    c.definition as AgentDefinition,
    c.input.settings,
    "interactive",
    c.now,
  );
  if (!built.ok) return built;
  return {
    ok: true,
    create: { id: "create-job", type: "createJob", agent: c.ref, job: built.job },
    jobName: built.job.metadata?.name ?? jobNameFor(c.ref.name),
  };
}

export const batchDisabled: Rule = {
  id: "batch-disabled",
  from: "Running",
  to: "Failed",
  when: "batch in flight and the controller runs with BATCH_ENABLED=false",
  does: "patch Failed `batch execution is disabled on this controller`; agent/failed (batch_disabled); release the finalizer without provider calls",
  guard: (c) => disabledInFlight(c),
  act: (c) =>
    finish(
      c,
      { phase: "Failed", exitCode: 1, failureReason: MSG_BATCH_DISABLED, failureKind: "batch_failed" },
      (dep) => [
        ...sinkEvents(
          c,
          "event-terminal",
          [lifecycle("failed", { exitCode: 1, reason: "batch_disabled" })],
          dep,
        ),
        ...(hasFinalizer(c) ? [removeFinalizer(c, dep)] : []),
      ],
    ),
};

export const batchResult: Rule = {
  id: "batch-result",
  from: "Running",
  to: "Succeeded|Failed",
  when: "batch in flight and a poll reported it ended (wins over a timeout in the same pass)",
  does: "patch Succeeded (exitCode 0) or Failed (exitCode 1, failureReason), output = capped CLI lines; then the lines (through select) and agent/succeeded or agent/failed (batch_failed)",
  guard: (c) => batchInFlight(c) && polledEnded(c),
  act: (c) => {
    const r = c.input.batch.pollResult as Extract<ReconcileInput["batch"]["pollResult"], { state: "ended" }>;
    const ok = r.outcome === "succeeded";
    const lines = r.lines ?? [];
    const usage = usageOf(c, lines.join("\n"));
    const terminalEvent = ok
      ? lifecycle("succeeded", { exitCode: 0 })
      : lifecycle("failed", { exitCode: 1, reason: "batch_failed" });
    return finish(
      c,
      {
        phase: ok ? "Succeeded" : "Failed",
        exitCode: ok ? 0 : 1,
        output: capOutput(lines.join("\n"), c.input.settings.maxOutputBytes),
        ...(ok
          ? {}
          : { failureReason: r.failureReason || "batch failed", failureKind: "batch_failed" as const }),
        ...(usage !== undefined ? { usage } : {}),
      },
      (dep) =>
        sinkEvents(
          c,
          "event-terminal",
          [...lines.map((line): SinkItem => ({ type: "cliLine", line })), terminalEvent],
          dep,
        ),
    );
  },
};

export const batchWaitDefinition: Rule = {
  id: "batch-wait-definition",
  from: "Running",
  to: "Running",
  when: "batch in flight, submitted before status.batchSubmission existed, and the AgentDefinition (so the API key entry) is gone",
  does: "nothing: the batch cannot be polled; a delete releases the finalizer",
  guard: (c) => batchInFlight(c) && (!c.apiKey || !c.provider),
  act: () => [],
};

export const batchFinalPoll: Rule = {
  id: "batch-final-poll",
  from: "Running",
  to: "Running",
  when: "batch in flight, batch.timeoutMinutes passed since startedAt, no poll since the deadline",
  does: "pollBatch once more, so a result that is already there wins over the timeout",
  guard: (c) => batchInFlight(c) && timedOut(c) && !finalPollDone(c),
  act: (c) => [pollAction(c)],
};

export const batchTimeoutFail: Rule = {
  id: "batch-timeout-fail",
  from: "Running",
  to: "Failed",
  when: "batch timed out with onTimeout: fail",
  does: "cancelBatch; patch Failed `batch timed out`, exitCode 1; then agent/failed (batch_timeout)",
  guard: (c) => batchInFlight(c) && timedOut(c) && onTimeout(c) === "fail",
  act: (c) => [
    ...timeoutCancel(c),
    ...finish(
      c,
      { phase: "Failed", exitCode: 1, failureReason: MSG_BATCH_TIMED_OUT, failureKind: "batch_timeout" },
      (dep) =>
        sinkEvents(c, "event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })], dep),
    ),
  ],
};

export const batchTimeoutFallback: Rule = {
  id: "batch-timeout-fallback",
  from: "Running",
  to: "Running",
  when: "batch timed out with onTimeout: fallback",
  does: "cancelBatch; if a Station slot is free create the Job; patch batchFallback true (batchId kept, + jobName); then agent/running (batch_timeout)",
  guard: (c) => batchInFlight(c) && timedOut(c),
  act: (c) => {
    if (!c.station || !c.definition) {
      // docs/decisions.md D-104: the batch still stops at its own deadline; without its recipe no Job can follow.
      const missing = !c.station
        ? `Station ${c.agent.spec.stationRef} not found`
        : `AgentDefinition ${c.station.spec.agentDefRef} not found`;
      return [
        ...timeoutCancel(c),
        ...fail(c, `${MSG_BATCH_TIMED_OUT}; the fallback Job cannot start: ${missing}`, "batch_timeout"),
      ];
    }
    const actions: Action[] = timeoutCancel(c);
    const status: PatchStatusAction["status"] = { batchFallback: true };
    let dependsOn: string[] | undefined;
    if (c.station && fallbackHasSlot(c.agent, c.station, c.input.stationAgents, c.input.pendingCreations)) {
      const job = createFallbackJob(c);
      if (!job.ok) return [...timeoutCancel(c), ...fail(c, job.reason, "invalid_spec")];
      actions.push(job.create);
      status.jobName = job.jobName;
      dependsOn = ["create-job"];
    }
    actions.push({ ...patch(c, status), ...(dependsOn ? { dependsOn } : {}) });
    actions.push(
      ...sinkEvents(
        c,
        "event-timeout",
        [lifecycle("running", { reason: "batch_timeout" })],
        ["patch-status"],
      ),
    );
    return actions;
  },
};

export const batchPoll: Rule = {
  id: "batch-poll",
  from: "Running",
  to: "Running",
  when: "batch in flight and BATCH_POLL_SECONDS have passed since the last poll",
  does: "pollBatch",
  guard: (c) => batchInFlight(c) && pollDue(c),
  act: (c) => [pollAction(c)],
};

export const batchPending: Rule = {
  id: "batch-pending",
  from: "Running",
  to: "Running",
  when: "batch in flight, not due for a poll",
  does: "nothing",
  guard: (c) => batchInFlight(c),
  act: () => [],
};

export const fallbackStart: Rule = {
  id: "fallback-start",
  from: "Running",
  to: "Running",
  when: "batchFallback true, no Job yet, Station and AgentDefinition present, a Station slot is free (docs/decisions.md D-16)",
  does: "create the Job; patch jobName",
  guard: (c) =>
    c.phase === "Running" &&
    onFallback(c) &&
    !hasJob(c) &&
    !!c.station &&
    !!c.definition &&
    fallbackHasSlot(c.agent, c.station, c.input.stationAgents, c.input.pendingCreations),
  act: (c) => {
    const job = createFallbackJob(c);
    if (!job.ok) return fail(c, job.reason, "invalid_spec");
    return [job.create, { ...patch(c, { jobName: job.jobName }), dependsOn: ["create-job"] }];
  },
};

export const fallbackWait: Rule = {
  id: "fallback-wait",
  from: "Running",
  to: "Running",
  when: "batchFallback true, no Job yet, Station full (or its refs missing)",
  does: "nothing; the Agent waits in Running until a slot frees",
  guard: (c) => c.phase === "Running" && onFallback(c) && !hasJob(c),
  act: () => [],
};
