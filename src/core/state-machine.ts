/**
 * The whole Agent state machine, in one place: `reconcile(input)` is a pure function from one
 * plain-data snapshot (see `input.ts`) to a list of plain-data actions (see `actions.ts`).
 *
 * Structure. Two rule tables are evaluated in order, the first matching rule of each wins:
 * - PHASE_RULES move the Agent through Pending → Running → Succeeded | Failed. They do not run
 *   for an Agent that is being deleted (its Job is garbage-collected with it) and do nothing for
 *   a terminal Agent: terminal → terminal is a no-op.
 * - FINALIZER_RULES run only while the Agent carries agents.re-cinq.com/batch-cleanup: cancel
 *   and delete the provider batch, count failed cleanups, release the finalizer. This is the
 *   only work a terminal Agent can still get.
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
import type { BatchProviderName } from "../batch/provider.js";
import {
  type Action,
  type ApiKeyRef,
  BATCH_CLEANUP_FINALIZER,
  type CostExecution,
  type FailureKind,
  type LifecycleEvent,
  type MetricObservation,
  type PatchStatusAction,
  type SinkItem,
} from "./actions.js";
import { budgetMessage, budgetVerdict, windowMs } from "./budget.js";
import { admit, fallbackHasSlot } from "./concurrency.js";
import { report } from "./conditions.js";
import type { BatchSubmitFailure, ReconcileInput } from "./input.js";
import { buildJob } from "./job-builder.js";
import { jobCreateRefusedReason, jobCreateRetryAt, jobCreateWaiting } from "./job-create.js";
import { jobNameFor } from "./names.js";
import { capOutput } from "./output.js";
import { formatUsd, totalTokens } from "./pricing/estimate.js";
import { type RunUsage, runUsage } from "./pricing/run-usage.js";
import { agentsToPrune, beyondHistoryLimit } from "./pruning.js";
import { jobState, MSG_JOB_GC, type TerminalResult, terminalFromJob } from "./readback.js";
import {
  DEFAULT_BATCH_MODEL,
  effectiveModel,
  routeModel,
  VENDOR_CAPABILITIES,
  type Vendor,
} from "./routing.js";
import { admissionFailure, executionOf, MSG_BATCH_DISABLED } from "./spec-checks.js";
import { DEFAULT_STUCK_POD_SECONDS, neverStartsReason } from "./stuck-pod.js";
import { renderPrompt } from "./templating.js";
import {
  type Agent,
  type AgentDefinition,
  type AgentPhase,
  type AgentRef,
  agentRef,
  type Execution,
  isTerminal,
  phaseOf,
  type Station,
} from "./types.js";

export const MSG_BATCH_TIMED_OUT = "batch timed out";
/** batch.timeoutMinutes default (24 h). */
export const DEFAULT_BATCH_TIMEOUT_MINUTES = 1440;
/** batch.maxTokens default. */
export const DEFAULT_BATCH_MAX_TOKENS = 16000;
/** Failed cleanups after which the finalizer is removed anyway. */
export const MAX_CLEANUP_ATTEMPTS = 5;
/** An unsettled batch this long after startedAt is stuck: its cleanups count as failures. */
export const CLEANUP_STUCK_MS = 48 * 3600 * 1000;
/** Polls are at least this far apart, whatever BATCH_POLL_SECONDS says (0 means "every reconcile"). */
export const MIN_POLL_GAP_MS = 1000;
/** Cleanup attempts are spaced like the safety-net poll, so watch events cannot burn the 5 tries. */
export const CLEANUP_RETRY_MS = 15_000;
/** First wait after a transiently failed submit; doubles per failed attempt up to SUBMIT_RETRY_MAX_MS. */
export const SUBMIT_RETRY_BASE_MS = 15_000;
export const SUBMIT_RETRY_MAX_MS = 10 * 60_000;

/**
 * When a transiently failed submit may be tried again: the provider's Retry-After when it sent
 * one, else exponential backoff from SUBMIT_RETRY_BASE_MS. Never sooner than MIN_POLL_GAP_MS.
 */
export function submitRetryAt(f: BatchSubmitFailure): number {
  const backoff = Math.min(SUBMIT_RETRY_BASE_MS * 2 ** Math.max(0, f.attempts - 1), SUBMIT_RETRY_MAX_MS);
  return f.at + Math.max(f.retryAfterMs ?? backoff, MIN_POLL_GAP_MS);
}

/** failureReason of a permanently refused submit; quotes the provider's message. */
export function submitFailedReason(message: string): string {
  return `batch submit failed: ${message}`;
}

/** RFC 3339 UTC with second precision, like metav1.Time. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

const ms = (t: string | Date | undefined): number | undefined => {
  if (t === undefined) return undefined;
  const v = new Date(t).getTime();
  return Number.isNaN(v) ? undefined : v;
};

const KEY_NAME: Record<BatchProviderName, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  openai: "OPENAI_API_KEY",
};

/** Everything the rules look at, derived once from the input. */
export interface Ctx {
  input: ReconcileInput;
  agent: Agent;
  ref: AgentRef;
  rv: string;
  phase: AgentPhase;
  deleting: boolean;
  finalizerIndex: number;
  station: Station | undefined;
  definition: AgentDefinition | undefined;
  execution: Execution | undefined;
  /** Effective model ("" when none). */
  model: string;
  vendor: Vendor;
  /** status.batchId, else a submitted-but-unpatched batch id. */
  batchId: string | undefined;
  provider: BatchProviderName | undefined;
  apiKey: ApiKeyRef | undefined;
  startedAt: number | undefined;
  now: number;
  /** status.batchSubmission: what the submit recorded, which wins over the (maybe changed or deleted) definition. */
  recorded: NonNullable<Agent["status"]>["batchSubmission"];
}

export function context(input: ReconcileInput): Ctx {
  const { agent, station, definition } = input;
  const model = effectiveModel(agent, definition);
  const status = agent.status ?? {};
  const batchId = status.batchId || input.batch.submitted?.batchId || undefined;
  const provider =
    (status.batchProvider as BatchProviderName | undefined) ||
    VENDOR_CAPABILITIES[routeModel(model)].batchProvider;
  const keyName = provider ? KEY_NAME[provider] : undefined;
  const recorded = status.batchSubmission;
  const keyRef =
    recorded?.keyRef ?? definition?.spec.resources?.secrets?.find((s) => s.name === keyName)?.ref;
  return {
    input,
    agent,
    ref: agentRef(agent),
    rv: agent.metadata.resourceVersion ?? "",
    phase: phaseOf(agent),
    deleting: !!agent.metadata.deletionTimestamp,
    finalizerIndex: (agent.metadata.finalizers ?? []).indexOf(BATCH_CLEANUP_FINALIZER),
    station,
    definition,
    execution: definition ? executionOf(definition) : undefined,
    model,
    vendor: routeModel(model),
    batchId,
    provider,
    apiKey: keyRef !== undefined ? { secretName: "agent-secrets", secretKey: keyRef } : undefined,
    startedAt: ms(status.startedAt),
    now: input.now,
    recorded,
  };
}

// ---------------------------------------------------------------------------------------------
// Facts the rules are written in.

const hasFinalizer = (c: Ctx) => c.finalizerIndex >= 0;
const isBatchRun = (c: Ctx) => !!c.agent.status?.batchId;
const onFallback = (c: Ctx) => c.agent.status?.batchFallback === true;
const hasJob = (c: Ctx) => !!c.agent.status?.jobName;
/** A Running run that is (still) a provider batch rather than a Job. */
const batchInFlight = (c: Ctx) => c.phase === "Running" && isBatchRun(c) && !onFallback(c);
/** A Running run whose outcome comes from a Job (ordinary, realtime, or a started fallback). */
const jobRun = (c: Ctx) => c.phase === "Running" && (!isBatchRun(c) || (onFallback(c) && hasJob(c)));
const polledEnded = (c: Ctx) => c.input.batch.pollResult?.state === "ended";

function timeoutAt(c: Ctx): number | undefined {
  if (c.startedAt === undefined) return undefined;
  const minutes =
    c.recorded?.timeoutMinutes ?? c.definition?.spec.batch?.timeoutMinutes ?? DEFAULT_BATCH_TIMEOUT_MINUTES;
  return c.startedAt + minutes * 60_000;
}
const timedOut = (c: Ctx) => {
  const at = timeoutAt(c);
  return at !== undefined && c.now >= at;
};
const finalPollDone = (c: Ctx) => {
  const at = timeoutAt(c);
  const last = c.input.batch.lastPollAt;
  return at !== undefined && last !== undefined && last >= at;
};
const pollDue = (c: Ctx) => {
  const last = c.input.batch.lastPollAt;
  // The floor keeps the follow-up reconcile of the same pass from polling again at BATCH_POLL_SECONDS=0.
  const gap = Math.max(c.input.settings.batchPollSeconds * 1000, MIN_POLL_GAP_MS);
  return last === undefined || c.now - last >= gap;
};
const onTimeout = (c: Ctx) => c.recorded?.onTimeout ?? c.definition?.spec.batch?.onTimeout ?? "fail";
const batchModel = (c: Ctx) => c.recorded?.model || c.model || DEFAULT_BATCH_MODEL;
/** Provider calls of the finalizer (and retried cancels) are spaced by 15 s, or the provider's Retry-After. */
const cleanupSpacingOver = (c: Ctx) => {
  const last = c.input.batch.lastCleanupAt;
  const gap = Math.max(CLEANUP_RETRY_MS, c.input.batch.cleanupRetryAfterMs ?? 0);
  return last === undefined || c.now - last >= gap;
};
const cleanupDue = (c: Ctx) => c.input.batch.cleanupResult === undefined && cleanupSpacingOver(c);
/** The batch stopped by a timeout: failed with `batch timed out…`, or handed over to a fallback Job. */
const timedOutRun = (c: Ctx) =>
  onFallback(c) ||
  (c.phase === "Failed" && (c.agent.status?.failureReason ?? "").startsWith(MSG_BATCH_TIMED_OUT));
/**
 * A cancel is owed until the provider confirmed one (docs/decisions.md D-102): the batch timed out, or the
 * Agent was deleted before its batch ended. A batch that ended with its result needs none.
 */
const cancelOwed = (c: Ctx) =>
  !!c.batchId &&
  c.input.batch.cancelledAt === undefined &&
  ((c.deleting && !isTerminal(c.phase)) || timedOutRun(c));
const submitFailure = (c: Ctx) => c.input.batch.submitFailure;
/** The finalizer's work has started: the batch result is in, it timed out, or the Agent is deleted. */
const batchFinished = (c: Ctx) => isTerminal(c.phase) || onFallback(c) || c.deleting;
const disabledInFlight = (c: Ctx) => !c.input.settings.batchEnabled && !c.deleting && batchInFlight(c);
const cleanupStuck = (c: Ctx) => c.startedAt !== undefined && c.now >= c.startedAt + CLEANUP_STUCK_MS;

// ---------------------------------------------------------------------------------------------
// Action builders.

function patch(c: Ctx, status: PatchStatusAction["status"], id = "patch-status"): PatchStatusAction {
  return { id, type: "patchStatus", agent: c.ref, resourceVersion: c.rv, status };
}

function metric(id: string, m: MetricObservation, dependsOn: string[]): Action {
  return { id, type: "recordMetric", metric: m, dependsOn };
}

function sinkEvents(c: Ctx, id: string, items: SinkItem[], dependsOn: string[]): Action[] {
  const out = c.definition?.spec.output;
  if (!out?.sinks?.length) return [];
  const source = {
    agent: c.ref.name,
    station: c.agent.spec.stationRef,
    ...(c.agent.spec.taskId ? { task: c.agent.spec.taskId } : {}),
    namespace: c.ref.namespace,
  };
  return [
    {
      id,
      type: "emitSinkEvents",
      agent: c.ref,
      source,
      sinks: out.sinks,
      select: out.select ?? [],
      vendor: routeModel(batchModel(c)),
      items,
      dependsOn,
    },
  ];
}

const lifecycle = (status: LifecycleEvent["status"], extra: Partial<LifecycleEvent> = {}): SinkItem => ({
  type: "lifecycle",
  event: { kind: "lifecycle", phase: "agent", status, ...extra },
});

/** Prunes the Station's history as it will be once this Agent's terminal patch landed. */
function prune(c: Ctx, terminal: Agent, dependsOn: string[]): Action[] {
  if (!c.station) return [];
  const others = c.input.stationAgents.filter((a) => a.metadata.name !== c.ref.name);
  return agentsToPrune(c.station, [...others, terminal]).map((victim) => {
    const self = victim.metadata.name === c.ref.name;
    return {
      id: `prune-${victim.metadata.name}`,
      type: "deleteAgent" as const,
      agent: agentRef(victim),
      // The own patch just changed this Agent's resourceVersion; it is guarded by the dependency.
      ...(self ? {} : { resourceVersion: victim.metadata.resourceVersion ?? "" }),
      reason: "prune" as const,
      dependsOn,
    };
  });
}

interface Terminal {
  phase: "Succeeded" | "Failed";
  exitCode: number;
  failureReason?: string;
  output?: string;
  sessionId?: string;
  prUrl?: string;
  jobName?: string;
  failureKind?: FailureKind;
  /** Tokens and cost read from the run's terminal lines (docs/cost-and-budgets.md). */
  usage?: RunUsage;
}

/** The cost metrics' execution label. */
function costExecution(c: Ctx): CostExecution {
  if (c.execution === "batch") return onFallback(c) ? "batch_fallback" : "batch";
  return jobMode(c);
}

/** The run's tokens and cost from its lines: a Job run's pod log, a batch run's CLI-format lines. */
function usageOf(c: Ctx, lines: string | undefined): RunUsage | undefined {
  if (lines === undefined) return undefined;
  const execution = costExecution(c);
  if (execution === "batch") {
    const model = batchModel(c);
    return runUsage({ vendor: routeModel(model), execution: "batch", model, lines });
  }
  return runUsage({ vendor: c.vendor, execution: jobMode(c), model: c.model, lines });
}

function usageStatus(u: RunUsage): PatchStatusAction["status"] {
  return {
    usage: { ...u.usage, totalTokens: totalTokens(u.usage) },
    costSource: u.costSource,
    ...(u.costUsd !== undefined ? { costUSD: formatUsd(u.costUsd) } : {}),
  };
}

/** The cost counters of a finished run, after its terminal patch (once per terminal transition). */
function costMetrics(c: Ctx, u: RunUsage, dep: string[]): Action[] {
  const execution = costExecution(c);
  const base = {
    station: c.agent.spec.stationRef,
    model: (execution === "batch" ? batchModel(c) : c.model) || "default",
    execution,
  };
  const types = [
    ["input", u.usage.inputTokens],
    ["output", u.usage.outputTokens],
    ["cache_read", u.usage.cacheReadTokens],
    ["cache_write", u.usage.cacheWriteTokens],
  ] as const;
  const out: Action[] = types
    .filter(([, n]) => n > 0)
    .map(([type, value]) =>
      metric(
        `metric-tokens-${type}`,
        { name: "controller_run_tokens_total", labels: { ...base, type }, value },
        dep,
      ),
    );
  if (u.costUsd !== undefined && u.costUsd > 0) {
    out.push(
      metric("metric-cost", { name: "controller_run_cost_usd_total", labels: base, value: u.costUsd }, dep),
    );
  }
  return out;
}

/**
 * The run's entry in its Station's status.spend, when the Station has a budget and the run cost
 * something. Before the terminal patch and not a condition of it: the entry is keyed by the Agent's
 * uid, so a patch that conflicts and is recomputed records nothing twice, and a Station write that
 * fails never keeps a run from finishing.
 */
function recordSpend(c: Ctx, u: RunUsage | undefined, completedAt: string): Action[] {
  const window = windowMs(c.station?.spec.budget?.window);
  if (!c.station || window === undefined || u?.costUsd === undefined || u.costUsd <= 0) return [];
  return [
    {
      id: "record-spend",
      type: "recordSpend",
      station: { namespace: c.ref.namespace, name: c.station.metadata?.name ?? c.agent.spec.stationRef },
      entry: { agent: c.ref.uid, completedAt, costUSD: formatUsd(u.costUsd) },
      windowMs: window,
    },
  ];
}

/** The terminal patch, its metrics (after the patch) and the history pruning (after the patch). */
function finish(c: Ctx, t: Terminal, extraAfterPatch: (dep: string[]) => Action[] = () => []): Action[] {
  const completedAt = rfc3339(c.now);
  const status: PatchStatusAction["status"] = {
    phase: t.phase,
    exitCode: t.exitCode,
    completedAt,
    ...(t.jobName !== undefined ? { jobName: t.jobName } : {}),
    ...(t.output !== undefined ? { output: t.output } : {}),
    ...(t.failureReason !== undefined ? { failureReason: t.failureReason } : {}),
    ...(t.sessionId !== undefined ? { sessionId: t.sessionId } : {}),
    ...(t.prUrl !== undefined ? { prUrl: t.prUrl } : {}),
    ...(t.usage !== undefined ? usageStatus(t.usage) : {}),
  };
  const dep = ["patch-status"];
  const metrics: Action[] = [
    metric(
      "metric-completed",
      { name: "controller_runs_completed_total", labels: { phase: t.phase, exit_code: String(t.exitCode) } },
      dep,
    ),
  ];
  if (c.startedAt !== undefined) {
    metrics.push(
      metric(
        "metric-duration",
        {
          name: "controller_run_duration_seconds",
          labels: { phase: t.phase },
          value: Math.max(0, (c.now - c.startedAt) / 1000),
        },
        dep,
      ),
    );
  }
  if (t.failureKind) {
    metrics.push(
      metric(
        "metric-failure",
        { name: "controller_run_failures_total", labels: { kind: t.failureKind } },
        dep,
      ),
    );
  }
  if (t.usage !== undefined) metrics.push(...costMetrics(c, t.usage, dep));
  const terminal: Agent = { ...c.agent, status: { ...c.agent.status, phase: t.phase, completedAt } };
  return [
    ...recordSpend(c, t.usage, completedAt),
    patch(c, status),
    ...extraAfterPatch(dep),
    ...metrics,
    ...prune(c, terminal, dep),
  ];
}

function fail(c: Ctx, reason: string, kind: FailureKind): Action[] {
  return finish(c, { phase: "Failed", exitCode: 1, failureReason: reason, failureKind: kind });
}

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

function jobMode(c: Ctx): "interactive" | "realtime" {
  return c.execution === "realtime" ? "realtime" : "interactive";
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

function cancelAction(c: Ctx, id = "cancel-batch"): Action {
  return {
    id,
    type: "cancelBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    batchId: c.batchId as string,
    apiKey: c.apiKey as ApiKeyRef,
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

function cleanupAction(c: Ctx, dependsOn?: string[]): Action {
  return {
    id: "cleanup-batch",
    type: "cleanupBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    batchId: c.batchId as string,
    apiKey: c.apiKey as ApiKeyRef,
    ...(dependsOn ? { dependsOn } : {}),
  };
}

function removeFinalizer(c: Ctx, dependsOn?: string[], id = "remove-finalizer"): Action {
  return {
    id,
    type: "removeFinalizer",
    agent: c.ref,
    finalizer: BATCH_CLEANUP_FINALIZER,
    index: c.finalizerIndex,
    ...(dependsOn ? { dependsOn } : {}),
  };
}

/** Job-run read-back into a terminal transition. */
function finishJob(c: Ctx): Action[] {
  const state = jobState(c.input.job ?? { found: false });
  if (state.state === "running") return [];
  const result: TerminalResult = terminalFromJob(
    state,
    c.input.pod,
    c.vendor,
    c.input.settings.maxOutputBytes,
  );
  const pod = c.input.pod;
  const log = pod?.found && pod.agentLog.available ? pod.agentLog.text : undefined;
  const usage = usageOf(c, log);
  return finish(c, {
    ...result,
    ...(c.agent.status?.jobName ? {} : { jobName: jobNameFor(c.ref.name) }),
    ...(usage !== undefined ? { usage } : {}),
  });
}

/** `<reason>: <message>` when the running Job's pod can never start (docs/decisions.md D-22). */
const neverStarts = (c: Ctx) =>
  neverStartsReason(c.input.runningPod, c.now, c.input.settings.stuckPodSeconds ?? DEFAULT_STUCK_POD_SECONDS);

/** Fail the run with the kubelet's reason, then delete its Job so the pod stops waiting. */
function giveUpOnPod(c: Ctx, reason: string): Action[] {
  const jobName = c.agent.status?.jobName || jobNameFor(c.ref.name);
  return finish(
    c,
    { phase: "Failed", exitCode: 1, output: "", failureReason: reason, failureKind: "job_failed" },
    (dep) => [{ type: "deleteJob", id: "delete-job", agent: c.ref, job: jobName, dependsOn: dep }],
  );
}

function jobObserved(c: Ctx): "unread" | "running" | "finished-unread-pod" | "finished" | "gone" {
  const job = c.input.job;
  if (!job) return "unread";
  const state = jobState(job);
  if (state.state === "gone") return "gone";
  if (state.state === "running") return "running";
  return c.input.pod === undefined ? "finished-unread-pod" : "finished";
}

// ---------------------------------------------------------------------------------------------
// The tables.

export interface Rule {
  /** Stable id; appears in docs and in `decide(...).rules`. */
  id: string;
  /** Phase the rule applies in ("any" for finalizer rules that ignore it). */
  from: string;
  /** Phase afterwards (same as `from` when it stays). */
  to: string;
  /** The guard, in words (rendered into the docs). */
  when: string;
  /** What it does, in words (rendered into the docs). */
  does: string;
  guard: (c: Ctx) => boolean;
  act: (c: Ctx) => Action[];
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

export const PHASE_RULES: readonly Rule[] = [
  {
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
  },
  {
    id: "terminal-noop",
    from: "Succeeded|Failed",
    to: "same",
    when: "the Agent is terminal",
    does: "nothing: terminal → terminal is a no-op",
    guard: (c) => isTerminal(c.phase),
    act: () => [],
  },
  {
    id: "station-missing",
    from: "Pending",
    to: "Failed",
    when: "spec.stationRef names no Station",
    does: "patch Failed, exitCode 1, failureReason `Station <name> not found`; count missing_ref",
    guard: (c) => pending(c) && !c.station,
    act: (c) => fail(c, `Station ${c.agent.spec.stationRef} not found`, "missing_ref"),
  },
  {
    id: "definition-missing",
    from: "Pending",
    to: "Failed",
    when: "station.spec.agentDefRef names no AgentDefinition",
    does: "patch Failed, exitCode 1, failureReason `AgentDefinition <name> not found`; count missing_ref; prune",
    guard: (c) => pending(c) && !c.definition,
    act: (c) => fail(c, `AgentDefinition ${c.station?.spec.agentDefRef} not found`, "missing_ref"),
  },
  {
    id: "invalid",
    from: "Pending",
    to: "Failed",
    when: "an admission check fails (docs/validation-rules.md: batch/realtime availability and field rules, resumeSession, prompt size)",
    does: "patch Failed, exitCode 1, failureReason = the check's message; count invalid_spec; prune",
    guard: (c) =>
      pending(c) &&
      admissionFailure(c.agent, c.definition as AgentDefinition, c.input.settings) !== undefined,
    act: (c) =>
      fail(
        c,
        admissionFailure(c.agent, c.definition as AgentDefinition, c.input.settings) as string,
        "invalid_spec",
      ),
  },
  {
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
  },
  {
    id: "batch-submit-rejected",
    from: "Pending",
    to: "Failed",
    when: "batch run whose last submit was refused for good (a 4xx other than 408/409/429, or its key missing from agent-secrets)",
    does: "patch Failed, exitCode 1, failureReason `batch submit failed: <the provider's message>`; count batch_failed; prune",
    guard: (c) => pending(c) && c.execution === "batch" && submitFailure(c)?.permanent === true,
    act: (c) => fail(c, submitFailedReason((submitFailure(c) as BatchSubmitFailure).message), "batch_failed"),
  },
  {
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
  },
  {
    id: "unbuildable",
    from: "Pending",
    to: "Failed",
    when: "the Job cannot be built (Job runs, and batch runs with onTimeout: fallback)",
    does: "patch Failed, failureReason `invalid Station template: <detail>` / `invalid AgentDefinition: <detail>` (docs/decisions.md D-17)",
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
  },
  {
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
  },
  {
    id: "wait-for-slot",
    from: "Pending",
    to: "Pending",
    when: "the Station is full (Running + issued-but-unseen creations + older waiting Agents ≥ limit) and Replace cannot make room",
    does: "nothing; retried on later reconciles",
    guard: (c) => pending(c) && admission(c)?.kind === "wait",
    act: () => [],
  },
  {
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
  },
  {
    id: "job-create-refused",
    from: "Pending",
    to: "Failed",
    when: "the last Job creation was refused for good (4xx other than 408/409/429: invalid field, quota, admission webhook, RBAC)",
    does: "patch Failed, exitCode 1, failureReason `Job creation refused: <the API's message>`; count job_rejected; prune",
    guard: (c) => jobCreateFailed(c)?.permanent === true,
    act: (c) => fail(c, jobCreateRefusedReason(jobCreateFailed(c) as JobCreateFailed), "job_rejected"),
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
    id: "batch-result",
    from: "Running",
    to: "Succeeded|Failed",
    when: "batch in flight and a poll reported it ended (wins over a timeout in the same pass)",
    does: "patch Succeeded (exitCode 0) or Failed (exitCode 1, failureReason), output = capped CLI lines; then the lines (through select) and agent/succeeded or agent/failed (batch_failed)",
    guard: (c) => batchInFlight(c) && polledEnded(c),
    act: (c) => {
      const r = c.input.batch.pollResult as Extract<
        ReconcileInput["batch"]["pollResult"],
        { state: "ended" }
      >;
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
  },
  {
    id: "batch-wait-definition",
    from: "Running",
    to: "Running",
    when: "batch in flight, submitted before status.batchSubmission existed, and the AgentDefinition (so the API key entry) is gone",
    does: "nothing: the batch cannot be polled; a delete releases the finalizer",
    guard: (c) => batchInFlight(c) && (!c.apiKey || !c.provider),
    act: () => [],
  },
  {
    id: "batch-final-poll",
    from: "Running",
    to: "Running",
    when: "batch in flight, batch.timeoutMinutes passed since startedAt, no poll since the deadline",
    does: "pollBatch once more, so a result that is already there wins over the timeout",
    guard: (c) => batchInFlight(c) && timedOut(c) && !finalPollDone(c),
    act: (c) => [pollAction(c)],
  },
  {
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
          sinkEvents(
            c,
            "event-terminal",
            [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })],
            dep,
          ),
      ),
    ],
  },
  {
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
        const built = buildJob(
          c.agent,
          c.station,
          c.definition as AgentDefinition,
          c.input.settings,
          "interactive",
          c.now,
        );
        if (!built.ok) return [...timeoutCancel(c), ...fail(c, built.reason, "invalid_spec")];
        actions.push({ id: "create-job", type: "createJob", agent: c.ref, job: built.job });
        status.jobName = built.job.metadata?.name ?? jobNameFor(c.ref.name);
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
  },
  {
    id: "batch-poll",
    from: "Running",
    to: "Running",
    when: "batch in flight and BATCH_POLL_SECONDS have passed since the last poll",
    does: "pollBatch",
    guard: (c) => batchInFlight(c) && pollDue(c),
    act: (c) => [pollAction(c)],
  },
  {
    id: "batch-pending",
    from: "Running",
    to: "Running",
    when: "batch in flight, not due for a poll",
    does: "nothing",
    guard: (c) => batchInFlight(c),
    act: () => [],
  },
  {
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
      const built = buildJob(
        c.agent,
        c.station as Station,
        c.definition as AgentDefinition,
        c.input.settings,
        "interactive",
        c.now,
      );
      if (!built.ok) return fail(c, built.reason, "invalid_spec");
      return [
        { id: "create-job", type: "createJob", agent: c.ref, job: built.job },
        {
          ...patch(c, { jobName: built.job.metadata?.name ?? jobNameFor(c.ref.name) }),
          dependsOn: ["create-job"],
        },
      ];
    },
  },
  {
    id: "fallback-wait",
    from: "Running",
    to: "Running",
    when: "batchFallback true, no Job yet, Station full (or its refs missing)",
    does: "nothing; the Agent waits in Running until a slot frees",
    guard: (c) => c.phase === "Running" && onFallback(c) && !hasJob(c),
    act: () => [],
  },
  {
    id: "job-unobserved",
    from: "Running",
    to: "Running",
    when: "Job run; the Job was not read, or it finished and its pod was not read yet",
    does: "nothing (the executor supplies job and pod)",
    guard: (c) => jobRun(c) && ["unread", "finished-unread-pod"].includes(jobObserved(c)),
    act: () => [],
  },
  {
    id: "pod-never-starts",
    from: "Running",
    to: "Failed",
    when: "Job running; its pod's init or agent container has waited longer than STUCK_POD_SECONDS (5 min) with CreateContainerConfigError, CreateContainerError, ErrImagePull, ImagePullBackOff or InvalidImageName",
    does: "patch Failed, exitCode 1, failureReason `<reason>: <message>`; then delete the Job; prune (docs/decisions.md D-22)",
    guard: (c) => jobRun(c) && jobObserved(c) === "running" && neverStarts(c) !== undefined,
    act: (c) => giveUpOnPod(c, neverStarts(c) as string),
  },
  {
    id: "job-running",
    from: "Running",
    to: "Running",
    when: "Job still running",
    does: "nothing",
    guard: (c) => jobRun(c) && jobObserved(c) === "running",
    act: () => [],
  },
  {
    id: "job-gc",
    from: "Running",
    to: "Failed",
    when: "the Job is gone (404) before its result was observed",
    does: `patch Failed, exitCode 1, failureReason \`${MSG_JOB_GC}\`, output empty; prune`,
    guard: (c) => jobRun(c) && jobObserved(c) === "gone",
    act: (c) => finishJob(c),
  },
  {
    id: "job-finished",
    from: "Running",
    to: "Succeeded|Failed",
    when: "Job Complete (→ Succeeded) or Failed (→ Failed)",
    does: "patch phase, exitCode (Succeeded 0; Failed non-zero), output (capped tail), failureReason (Job reason, or `run output unavailable: pod garbage-collected`), sessionId, prUrl, completedAt; prune",
    guard: (c) => jobRun(c) && jobObserved(c) === "finished",
    act: (c) => finishJob(c),
  },
];

export const FINALIZER_RULES: readonly Rule[] = [
  {
    id: "release-batch-disabled",
    from: "any",
    to: "same",
    when: "finalizer present, BATCH_ENABLED=false (and not failing an in-flight batch in this pass)",
    does: "remove the finalizer without provider calls (the batch is left to expire)",
    guard: (c) => !c.input.settings.batchEnabled && !disabledInFlight(c),
    act: (c) => [removeFinalizer(c)],
  },
  {
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
  },
  {
    id: "cleanup-done",
    from: "any",
    to: "same",
    when: "the cleanup attempt of this pass reported done",
    does: "remove the finalizer",
    guard: (c) => c.input.batch.cleanupResult?.state === "done",
    act: (c) => [removeFinalizer(c)],
  },
  {
    id: "cleanup-failed",
    from: "any",
    to: "same",
    when: "the cleanup attempt of this pass failed, its cancel failed on delete, or it is unsettled 48 h after startedAt",
    does: "patch batchCleanupAttempts + 1 (phase untouched); count controller_batch_cleanup_failures_total; at 5 remove the finalizer anyway",
    guard: (c) => {
      const r = c.input.batch.cleanupResult;
      return (
        r?.state === "failed" ||
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
  },
  {
    id: "cleanup-not-settled",
    from: "any",
    to: "same",
    when: "the cleanup attempt of this pass found the batch not settled yet, or the timeout's cancel failed (Agent not deleted; within 48 h of startedAt)",
    does: "nothing; not a failure, retried 15 s (or the provider's Retry-After) later",
    guard: (c) => ["not_settled", "cancel_failed"].includes(c.input.batch.cleanupResult?.state ?? ""),
    act: () => [],
  },
  {
    id: "release-no-provider",
    from: "any",
    to: "same",
    when: "cleanup is due but the AgentDefinition or its API key entry is gone",
    does: "remove the finalizer (no key, no provider call possible)",
    guard: (c) => batchFinished(c) && (!c.apiKey || !c.provider),
    act: (c) => [removeFinalizer(c)],
  },
  {
    id: "cancel-then-cleanup",
    from: "any",
    to: "same",
    when: "a cancel is owed and not yet confirmed (the Agent was deleted while its batch was in flight, or the batch timed out), no try in the last 15 s",
    does: "cancelBatch, then cleanupBatch (Gemini: the DELETE only after the cancel went through)",
    guard: (c) => cancelOwed(c) && cleanupDue(c),
    act: (c) => [cancelAction(c), cleanupAction(c, ["cancel-batch"])],
  },
  {
    id: "cleanup",
    from: "any",
    to: "same",
    when: "batch finished (terminal, timed out into fallback, or Agent deleted) and no cleanup in the last 15 s",
    does: "cleanupBatch",
    guard: (c) => batchFinished(c) && cleanupDue(c),
    act: (c) => [cleanupAction(c)],
  },
  {
    id: "finalizer-wait",
    from: "any",
    to: "same",
    when: "otherwise (batch in flight, or cleanup retried too recently)",
    does: "nothing",
    guard: () => true,
    act: () => [],
  },
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
  // The rules' decision, plus status.conditions and Kubernetes Events (conditions.ts).
  return report(input, decide(input), rfc3339(input.now));
}
