/**
 * Phase rules for a Pending Agent, in order: missing references and failed spec checks fail it; a
 * batch run's submit is recorded, refused or backed off; a run that cannot be built fails; a
 * spent budget or a full Station keeps it waiting; otherwise the batch is submitted or the Job
 * created (after any Replace preemption), with Job creation failures refused or backed off.
 */

import { type Action, type ApiKeyRef, BATCH_CLEANUP_FINALIZER, type PatchStatusAction } from "../actions.js";
import type { BatchProviderName } from "../batch-port.js";
import { renderPrompt } from "../cli/templating.js";
import type { BatchSubmitFailure, ReconcileInput } from "../input.js";
import { specCheckFailure } from "../policy/spec-checks.js";
import { providerVerdict } from "../provider-limits/admission.js";
import { jobCreateRefusedReason, jobCreateRetryAt, jobCreateWaiting } from "../run-job/create-failure.js";
import { buildJob } from "../run-job/job.js";
import { jobNameFor } from "../run-job/names.js";
import { budgetMessage, budgetVerdict } from "../station-limits/budget.js";
import { admit } from "../station-limits/concurrency.js";
import { type Agent, type AgentDefinition, agentRef, type Station } from "../types.js";
import { fail, jobMode, lifecycle, metric, patch, sinkEvents } from "./builders.js";
import type { Ctx, Rule } from "./context.js";
import { batchModel, hasFinalizer, onTimeout, submitFailure } from "./facts.js";
import { DEFAULT_BATCH_TIMEOUT_MINUTES, ms, rfc3339, submitRetryAt } from "./timing.js";

/** batch.maxTokens default. */
export const DEFAULT_BATCH_MAX_TOKENS = 16000;

/** failureReason of a permanently refused submit; quotes the provider's message. */
export function submitFailedReason(message: string): string {
  return `batch submit failed: ${message}`;
}

const pending = (c: Ctx) => c.phase === "Pending";
type JobCreateFailed = NonNullable<ReconcileInput["jobCreateFailure"]>;
/** A Job run still Pending whose last Job creation failed (docs/decisions.md D-101). */
const jobCreateFailed = (c: Ctx) =>
  pending(c) && c.execution !== "batch" ? c.input.jobCreateFailure : undefined;
const admission = (c: Ctx) =>
  c.station && c.definition
    ? admit(c.agent, c.station, c.input.stationAgents, c.input.pendingCreations)
    : undefined;

function preemptions(c: Ctx, victims: Agent[]): { actions: Action[]; ids: string[] } {
  const actions: Action[] = [];
  const ids: string[] = [];
  for (const v of victims) {
    const id = `preempt-${v.metadata.name}`;
    ids.push(id);
    actions.push({
      id,
      type: "deleteAgent",
      agent: agentRef(v),
      resourceVersion: v.metadata.resourceVersion ?? "",
      reason: "preempt",
      for: c.ref,
    });
    actions.push(
      metric(
        `metric-preempted-${v.metadata.name}`,
        { name: "controller_run_failures_total", labels: { kind: "preempted" } },
        [id],
      ),
    );
  }
  return { actions, ids };
}

/**
 * The Running patch of a Job run. A realtime run that resumes a session keeps that session's id
 * (docs/decisions.md D-44), so status.sessionId names it from the start rather than from the first prompt's reply.
 */
function runningStatus(c: Ctx, jobName: string): PatchStatusAction["status"] {
  const resumed = jobMode(c) === "realtime" ? c.agent.spec.resumeSession : undefined;
  return { phase: "Running", jobName, startedAt: rfc3339(c.now), ...(resumed ? { sessionId: resumed } : {}) };
}

/** Job creation for a Pending run (after any Replace preemption). */
function startJob(c: Ctx, victims: Agent[]): Action[] {
  const built = buildJob(
    c.agent,
    c.station as Station,
    c.definition as AgentDefinition,
    c.input.settings,
    jobMode(c),
    c.now,
  );
  if (!built.ok) return fail(c, built.reason, "invalid_spec");
  const pre = preemptions(c, victims);
  const jobName = built.job.metadata?.name ?? jobNameFor(c.ref.name);
  const actions: Action[] = [
    ...pre.actions,
    {
      id: "create-job",
      type: "createJob",
      agent: c.ref,
      job: built.job,
      ...(pre.ids.length ? { dependsOn: pre.ids } : {}),
    },
    { ...patch(c, runningStatus(c, jobName)), dependsOn: ["create-job"] },
  ];
  const created = ms(c.agent.metadata.creationTimestamp);
  if (created !== undefined) {
    actions.push(
      metric(
        "metric-queue",
        { name: "controller_run_queue_seconds", value: Math.max(0, (c.now - created) / 1000) },
        ["create-job", "patch-status"],
      ),
    );
  }
  return actions;
}

function startBatch(c: Ctx, victims: Agent[]): Action[] {
  const def = (c.definition as AgentDefinition).spec;
  const pre = preemptions(c, victims);
  const actions: Action[] = [...pre.actions];
  let dependsOn = pre.ids;
  if (!hasFinalizer(c)) {
    // docs/decisions.md D-50: the finalizer goes on before the batch exists, so a delete can never orphan it.
    actions.push({
      id: "add-finalizer",
      type: "addFinalizer",
      agent: c.ref,
      finalizer: BATCH_CLEANUP_FINALIZER,
      ...(dependsOn.length ? { dependsOn } : {}),
    });
    dependsOn = ["add-finalizer"];
  }
  actions.push({
    id: "submit-batch",
    type: "submitBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    apiKey: c.apiKey as ApiKeyRef,
    request: {
      agentUid: c.ref.uid,
      model: batchModel(c),
      prompt: renderPrompt(def.prompt, c.agent.spec.parameters),
      maxTokens: def.batch?.maxTokens ?? DEFAULT_BATCH_MAX_TOKENS,
      ...(def.output?.schema ? { outputSchema: def.output.schema } : {}),
      // OpenAI: a retry reuses the file the failed attempt uploaded (one upload per Agent).
      ...(submitFailure(c)?.inputFileId ? { inputFileId: submitFailure(c)?.inputFileId } : {}),
    },
    ...(dependsOn.length ? { dependsOn } : {}),
  });
  return actions;
}

export const stationMissing: Rule = {
  id: "station-missing",
  from: "Pending",
  to: "Failed",
  when: "spec.stationRef names no Station",
  does: "patch Failed, exitCode 1, failureReason `Station <name> not found`; count missing_ref",
  guard: (c) => pending(c) && !c.station,
  act: (c) => fail(c, `Station ${c.agent.spec.stationRef} not found`, "missing_ref"),
};

export const definitionMissing: Rule = {
  id: "definition-missing",
  from: "Pending",
  to: "Failed",
  when: "station.spec.agentDefRef names no AgentDefinition",
  does: "patch Failed, exitCode 1, failureReason `AgentDefinition <name> not found`; count missing_ref; prune",
  guard: (c) => pending(c) && !c.definition,
  act: (c) => fail(c, `AgentDefinition ${c.station?.spec.agentDefRef} not found`, "missing_ref"),
};

export const invalid: Rule = {
  id: "invalid",
  from: "Pending",
  to: "Failed",
  when: "an admission check fails (docs/validation-rules.md: batch/realtime availability and field rules, resumeSession, prompt size)",
  does: "patch Failed, exitCode 1, failureReason = the check's message; count invalid_spec; prune",
  guard: (c) =>
    pending(c) && specCheckFailure(c.agent, c.definition as AgentDefinition, c.input.settings) !== undefined,
  act: (c) =>
    fail(
      c,
      specCheckFailure(c.agent, c.definition as AgentDefinition, c.input.settings) as string,
      "invalid_spec",
    ),
};

export const batchSubmitted: Rule = {
  id: "batch-submitted",
  from: "Pending",
  to: "Running",
  when: "batch run whose submit result is remembered (batch.submitted)",
  does: "patch Running, batchId, batchProvider, startedAt (submit time); then agent/started to the sinks",
  guard: (c) => pending(c) && c.execution === "batch" && !!c.input.batch.submitted,
  act: (c) => {
    const sub = c.input.batch.submitted as { batchId: string; at: number };
    return [
      patch(c, {
        phase: "Running",
        batchId: sub.batchId,
        batchProvider: c.provider,
        startedAt: rfc3339(sub.at),
        // docs/decisions.md D-104: the run keeps what it was submitted with if its definition changes or goes.
        ...(c.apiKey
          ? {
              batchSubmission: {
                keyRef: c.apiKey.secretKey,
                model: batchModel(c),
                timeoutMinutes: c.definition?.spec.batch?.timeoutMinutes ?? DEFAULT_BATCH_TIMEOUT_MINUTES,
                onTimeout: onTimeout(c),
              },
            }
          : {}),
      }),
      ...sinkEvents(c, "event-started", [lifecycle("started")], ["patch-status"]),
    ];
  },
};

export const batchSubmitRejected: Rule = {
  id: "batch-submit-rejected",
  from: "Pending",
  to: "Failed",
  when: "batch run whose last submit was refused for good (a 4xx other than 408/409/429, or its key missing from agent-secrets)",
  does: "patch Failed, exitCode 1, failureReason `batch submit failed: <the provider's message>`; count batch_failed; prune",
  guard: (c) => pending(c) && c.execution === "batch" && submitFailure(c)?.permanent === true,
  act: (c) => fail(c, submitFailedReason((submitFailure(c) as BatchSubmitFailure).message), "batch_failed"),
};

export const batchSubmitBackoff: Rule = {
  id: "batch-submit-backoff",
  from: "Pending",
  to: "Pending",
  when: "batch run whose last submit failed transiently (408, 409, 429, 5xx, network), before its retry time",
  does: "reportWaiting `BatchSubmitRetrying` with the provider's message and the retry time (Retry-After, else 15 s doubling to 10 min)",
  guard: (c) => {
    const f = submitFailure(c);
    return pending(c) && c.execution === "batch" && f !== undefined && c.now < submitRetryAt(f);
  },
  act: (c) => {
    const f = submitFailure(c) as BatchSubmitFailure;
    const retryAt = submitRetryAt(f);
    return [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: c.ref,
        reason: "BatchSubmitRetrying",
        message: `batch submit failed (attempt ${f.attempts}), retrying at ${rfc3339(retryAt)}: ${f.message}`,
        retryAt,
      },
    ];
  },
};

export const unbuildable: Rule = {
  id: "unbuildable",
  from: "Pending",
  to: "Failed",
  when: "the Job cannot be built (Job runs, and batch runs with onTimeout: fallback)",
  does: "patch Failed, failureReason `invalid Station template: <detail>` / `invalid AgentDefinition: <detail>` (docs/decisions.md D-17); with the model gateway on also `model gateway: AgentDefinition <ns>/<name> has no resources.secrets entry named <NAME>…` (docs/gateway.md#provider-keys) and `provider key in the run pod: <where>` (docs/gateway.md#run-credentials)",
  guard: (c) =>
    pending(c) &&
    (c.execution !== "batch" || onTimeout(c) === "fallback") &&
    !buildJob(c.agent, c.station as Station, c.definition as AgentDefinition, c.input.settings, jobMode(c))
      .ok,
  act: (c) => {
    const built = buildJob(
      c.agent,
      c.station as Station,
      c.definition as AgentDefinition,
      c.input.settings,
      jobMode(c),
    );
    return built.ok ? [] : fail(c, built.reason, "invalid_spec");
  },
};

export const budgetExhausted: Rule = {
  id: "budget-exhausted",
  from: "Pending",
  to: "Pending",
  when: "the Station has a spec.budget and the spend its status.spend records within the window has reached limitUSD",
  does: "reportWaiting `BudgetExhausted` naming the budget, the spend and when the window frees room; reconcile again at that time (runs already going are not stopped)",
  guard: (c) => pending(c) && budgetVerdict(c.station, c.now).state === "exhausted",
  act: (c) => {
    const v = budgetVerdict(c.station, c.now) as Extract<
      ReturnType<typeof budgetVerdict>,
      { state: "exhausted" }
    >;
    return [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: c.ref,
        reason: "BudgetExhausted",
        message: budgetMessage(c.station?.metadata?.name ?? c.agent.spec.stationRef, v, rfc3339),
        ...(v.freesAt !== undefined ? { retryAt: v.freesAt } : {}),
      },
    ];
  },
};

export const waitForSlot: Rule = {
  id: "wait-for-slot",
  from: "Pending",
  to: "Pending",
  when: "the Station is full (Running + issued-but-unseen creations + older waiting Agents ≥ limit) and Replace cannot make room",
  does: "nothing; retried on later reconciles",
  guard: (c) => pending(c) && admission(c)?.kind === "wait",
  act: () => [],
};

const providerHeld = (c: Ctx) => {
  if (!pending(c) || !c.station || !c.input.provider) return undefined;
  const v = providerVerdict({
    agent: c.agent,
    station: c.station,
    stationAgents: c.input.stationAgents,
    pendingCreations: c.input.pendingCreations,
    provider: c.input.provider,
    now: c.now,
    rfc3339,
    ...(c.input.settings.providerMaxHoldSeconds !== undefined
      ? { maxHoldMs: c.input.settings.providerMaxHoldSeconds * 1000 }
      : {}),
  });
  return v.kind === "hold" ? v : undefined;
};

export const providerHold: Rule = {
  id: "provider-hold",
  from: "Pending",
  to: "Pending",
  when: "the Station would start the run, but its provider endpoint and key is at a limit: a retry-after or a concurrent-run window the controller learned from the provider's throttling answers, or the Station's spec.providerLimits (concurrent runs; run starts per minute from requestsPerMinute or tokensPerMinute, evenly spaced, older Agents of the Station first)",
  does: "reportWaiting `ProviderThrottled` (learned) or `ProviderLimitReached` (declared) naming the provider, its endpoint and key, the limit and when the next run starts; reconcile again at that time, or when a run against the endpoint ends (a waiting Agent is never failed for waiting)",
  guard: (c) => providerHeld(c) !== undefined,
  act: (c) => {
    const v = providerHeld(c) as NonNullable<ReturnType<typeof providerHeld>>;
    return [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: c.ref,
        reason: v.reason,
        message: v.message,
        ...(v.retryAt !== undefined ? { retryAt: v.retryAt } : {}),
        // The provider throttling is a warning; a limit the Station declares is the plan working.
        eventType: v.reason === "ProviderThrottled" ? "Warning" : "Normal",
      },
    ];
  },
};

export const batchSubmit: Rule = {
  id: "batch-submit",
  from: "Pending",
  to: "Pending",
  when: "batch run admitted",
  does: "Replace: delete the oldest Running run(s) first; add the finalizer; submitBatch (model, prompt, maxTokens, schema)",
  guard: (c) => pending(c) && c.execution === "batch",
  act: (c) => {
    const a = admission(c);
    return startBatch(c, a?.kind === "start" ? a.preempt : []);
  },
};

export const jobCreateRefused: Rule = {
  id: "job-create-refused",
  from: "Pending",
  to: "Failed",
  when: "the last Job creation was refused for good (4xx other than 408/409/429: invalid field, quota, admission webhook, RBAC)",
  does: "patch Failed, exitCode 1, failureReason `Job creation refused: <the API's message>`; count job_rejected; prune",
  guard: (c) => jobCreateFailed(c)?.permanent === true,
  act: (c) => fail(c, jobCreateRefusedReason(jobCreateFailed(c) as JobCreateFailed), "job_rejected"),
};

export const jobCreateBackoff: Rule = {
  id: "job-create-backoff",
  from: "Pending",
  to: "Pending",
  when: "the last Job creation failed transiently (408, 429, 5xx, network) and its backoff (or Retry-After) has not passed",
  does: "report why the Agent waits (JobCreateRetrying, with the API's message); reconcile again when the backoff ends",
  guard: (c) => {
    const f = jobCreateFailed(c);
    return f !== undefined && c.now < jobCreateRetryAt(f);
  },
  act: (c) => [jobCreateWaiting(c.ref, jobCreateFailed(c) as JobCreateFailed, rfc3339)],
};

export const jobCreate: Rule = {
  id: "job-create",
  from: "Pending",
  to: "Running",
  when: "Job run (interactive or realtime) admitted",
  does: "Replace: delete the oldest Running run(s) first; create the Job; patch Running, jobName, startedAt (and sessionId = resumeSession for a resumed realtime session, docs/decisions.md D-44)",
  guard: (c) => pending(c),
  act: (c) => {
    const a = admission(c);
    return startJob(c, a?.kind === "start" ? a.preempt : []);
  },
};
