/**
 * The decisions the reconcile core hands to the I/O layer, as plain data.
 *
 * Execution contract (the executor MUST honour it):
 * - Actions run in list order.
 * - Every action has an `id` unique within one reconcile result. An action with `dependsOn`
 *   runs only if every listed action ran and succeeded; otherwise it is skipped (not retried:
 *   the next reconcile recomputes). This is how "send the sink event only after the patch it
 *   reports succeeded", "record the metric only after the transition was written" and "prune only
 *   after the terminal patch" are expressed.
 * - A failed action (e.g. 409 Conflict on a patch) is logged and dropped; the next reconcile
 *   recomputes from fresh state. Only the provider actions feed a result back (see
 *   {@link BatchMemory} in `input.ts`).
 */
import type { V1Job } from "@kubernetes/client-node";
import type { BatchProviderName, BatchSubmitRequest } from "./batch-port.js";
import type { Vendor } from "./cli/routing.js";
import type { AgentRef, AgentStatus, OutputSelector, Sink } from "./types.js";

/** The finalizer batch runs carry until their provider-side objects are gone. */
export const BATCH_CLEANUP_FINALIZER = "agents.re-cinq.com/batch-cleanup";

interface ActionBase {
  /** Unique within one reconcile result, e.g. "patch-status". */
  id: string;
  /** Ids of earlier actions that must all have succeeded for this one to run. */
  dependsOn?: string[];
}

/**
 * Create the run's Job. 201 and 409 AlreadyExists both count as success; on 409 the executor
 * should adopt the existing Job only when its controller owner uid is `agent.uid` (docs/decisions.md D-56) and
 * otherwise report failure (so dependants are skipped and the Agent stays as it is).
 */
export interface CreateJobAction extends ActionBase {
  type: "createJob";
  agent: AgentRef;
  job: V1Job;
}

/**
 * JSON merge patch of the Agent's `status` subresource, carrying `metadata.resourceVersion`
 * as the optimistic-concurrency precondition (a 409 means "dropped; recompute"). Only the
 * fields present in `status` are written; a field set to `null` is removed.
 */
export interface PatchStatusAction extends ActionBase {
  type: "patchStatus";
  agent: AgentRef;
  /** The resourceVersion of the Agent this patch was computed from. */
  resourceVersion: string;
  status: { [K in keyof AgentStatus]?: AgentStatus[K] | null };
}

/**
 * Delete an Agent with its cached resourceVersion as precondition (`preconditions.resourceVersion`).
 * 404 and 409 are ignored (count as success for prune; for preempt a 409 means the victim
 * changed: report failure so the new run waits for the next reconcile).
 */
export interface DeleteAgentAction extends ActionBase {
  type: "deleteAgent";
  agent: AgentRef;
  /**
   * Precondition. Omitted only when an Agent prunes itself right after its own terminal patch
   * (which changed its resourceVersion; the dependency on that patch already guards it).
   */
  resourceVersion?: string;
  /** prune: history limit; preempt: concurrencyPolicy Replace made room for `for`. */
  reason: "prune" | "preempt";
  /** For a preempt: the Agent the room was made for. */
  for?: AgentRef;
}

/**
 * Delete the run's Job (propagationPolicy Background, so its pod goes too), preconditioned on the
 * Job's uid when known. 404 counts as success. Used when the pod can never start (docs/decisions.md D-22).
 */
export interface DeleteJobAction extends ActionBase {
  type: "deleteJob";
  agent: AgentRef;
  job: string;
}

/**
 * Append `finalizer` to metadata.finalizers with a JSON patch (application/json-patch+json), so
 * other controllers' finalizers are untouched. Skip if it is already present.
 */
export interface AddFinalizerAction extends ActionBase {
  type: "addFinalizer";
  agent: AgentRef;
  finalizer: typeof BATCH_CLEANUP_FINALIZER;
}

/**
 * Remove one entry of metadata.finalizers with a JSON patch: `test` that
 * `/metadata/finalizers/<index>` equals `finalizer`, then `remove` it. `index` is where the core
 * saw it; if the test fails the executor re-reads and retries on the next reconcile.
 */
export interface RemoveFinalizerAction extends ActionBase {
  type: "removeFinalizer";
  agent: AgentRef;
  finalizer: typeof BATCH_CLEANUP_FINALIZER;
  index: number;
}

/** How the executor finds the vendor API key: key `secretKey` of the Secret agent-secrets. */
export interface ApiKeyRef {
  secretName: "agent-secrets";
  secretKey: string;
}

/**
 * Submit the batch request. The executor reads the API key, calls `BatchProvider.submit`, and
 * stores `{batchId, at}` as `BatchMemory.submitted` for this Agent; it also counts the Agent as a
 * creation issued (`ReconcileInput.pendingCreations`) until the cache shows it Running.
 * Then it reconciles again; the core patches Running from the stored result (docs/decisions.md D-50: the submit
 * itself is never repeated while the result is remembered). A failed submit (or an unreadable API
 * key) is stored as `BatchMemory.submitFailure` (permanent or not, the message, attempts in a row,
 * Retry-After, OpenAI's uploaded file) and reconciled again: the core fails the Agent or waits.
 * When an earlier attempt's answer was lost after sending (`BatchSubmitFailure.unansweredSince`),
 * the executor first looks for the batch that attempt may have created and adopts it; it sends
 * the request again only when the provider shows none (docs/batch-runs.md#a-submit-whose-answer-was-lost).
 */
export interface SubmitBatchAction extends ActionBase {
  type: "submitBatch";
  agent: AgentRef;
  provider: BatchProviderName;
  apiKey: ApiKeyRef;
  request: Omit<BatchSubmitRequest, "apiKey">;
}

/**
 * Poll the batch. The executor stores `lastPollAt = now` and the result as
 * `BatchMemory.pollResult` (or clears it when the poll threw: an error is retried at the next
 * due poll), then reconciles again.
 */
export interface PollBatchAction extends ActionBase {
  type: "pollBatch";
  agent: AgentRef;
  provider: BatchProviderName;
  batchId: string;
  apiKey: ApiKeyRef;
  ctx: { agentUid: string; model: string };
}

/**
 * Request cancellation. On success store `BatchMemory.cancelledAt = now`. On failure store
 * `lastCleanupAt = now`, the one-shot `cleanupResult: {state: "cancel_failed", error}` and the
 * provider's Retry-After, and reconcile again: on delete the core counts it as a failed cleanup.
 */
export interface CancelBatchAction extends ActionBase {
  type: "cancelBatch";
  agent: AgentRef;
  provider: BatchProviderName;
  batchId: string;
  apiKey: ApiKeyRef;
}

/**
 * Delete the provider-side objects. The executor stores `lastCleanupAt = now` and the outcome as
 * the one-shot `BatchMemory.cleanupResult` (`{state: "failed", error}` when `cleanup` threw),
 * reconciles again with it, and then clears `cleanupResult` (each outcome is counted once).
 */
export interface CleanupBatchAction extends ActionBase {
  type: "cleanupBatch";
  agent: AgentRef;
  provider: BatchProviderName;
  batchId: string;
  apiKey: ApiKeyRef;
}

/**
 * Delete an input file a failed submit uploaded and no batch refers to (OpenAI), when the Agent
 * goes without a batch ever being created. Best effort: the finalizer does not wait for it.
 */
export interface DiscardUploadAction extends ActionBase {
  type: "discardUpload";
  agent: AgentRef;
  provider: BatchProviderName;
  fileId: string;
  apiKey: ApiKeyRef;
}

export type LifecyclePhase = "init" | "agent" | "turn";
export type LifecycleStatus = "started" | "installing" | "running" | "succeeded" | "failed";

/**
 * A lifecycle event (docs/events.md#lifecycle-events), whoever sends it: the controller for a batch
 * run (phase `agent`, reasons `batch_failed`, `batch_timeout`, `batch_disabled`), the run pod's
 * programs for a pod run. The wire key order is fixed by the sink layer, not by this type.
 */
export interface LifecycleEvent {
  kind: "lifecycle";
  phase: LifecyclePhase;
  status: LifecycleStatus;
  tool?: string;
  reason?: string;
  exitCode?: number;
  turn?: number;
}

/**
 * What the gateway's egress proxy refused a run (docs/gateway.md#egress), sent once when the run
 * ends, after the status patch that records the same figures in status.egress.
 */
export interface EgressEvent {
  kind: "egress";
  status: "refused";
  /** Connections and requests refused. */
  refused: number;
  /** The first distinct destinations refused, each as `<role> <host>:<port>`. */
  destinations: string[];
}

/**
 * One entry of a sink delivery, in order. The core sends lifecycle events and the egress summary;
 * the run pod's programs also send their other platform events (file, delivery) as `Event = object`.
 */
export type SinkItem<Event extends object = LifecycleEvent | EgressEvent> =
  /** A platform event: never filtered by output.select. */
  | { type: "lifecycle"; event: Event }
  /** A CLI line (for a batch run, built from the result): the sink layer applies `select`, classified as `vendor`. */
  | { type: "cliLine"; line: string };

/**
 * Deliver events to the definition's output.sinks in the {"source","event"} envelope, in order,
 * at most once (the sink layer retries with backoff, then drops). Emitted only when the
 * definition has sinks.
 */
export interface EmitSinkEventsAction extends ActionBase {
  type: "emitSinkEvents";
  agent: AgentRef;
  /** Envelope source: no `pod` for batch runs; empty fields are left out by the sink layer. */
  source: { agent: string; station: string; task?: string; namespace: string };
  sinks: Sink[];
  select: OutputSelector[];
  /** Classification rules for `cliLine` items (docs/events.md#outputselect). */
  vendor: Vendor;
  items: SinkItem[];
}

/**
 * Why a non-terminal Agent is not progressing right now (docs/decisions.md D-101), as data: the
 * core's report step turns it into the Ready condition's message and a Kubernetes Event. It
 * changes nothing by itself; when `retryAt` is set the controller reconciles the Agent again at
 * that time.
 */
export interface ReportWaitingAction extends ActionBase {
  type: "reportWaiting";
  agent: AgentRef;
  /** CamelCase, like a condition or Event reason, e.g. "JobCreateRetrying". */
  reason: string;
  /** Human-readable, quoting the error that made the Agent wait. */
  message: string;
  /** Epoch ms of the next attempt, when the wait is a retry backoff. */
  retryAt?: number;
  /** The Event's type when the rule says; otherwise Warning with a retryAt, Normal without. */
  eventType?: "Normal" | "Warning";
}

/**
 * A Kubernetes Event (events.k8s.io/v1) about an Agent, shown by `kubectl describe agent`.
 * `reason` is UpperCamelCase and stable (what happened); `action` is what the controller did or
 * tried (UpperCamelCase); `note` is the sentence a user reads (the recorder caps it at 1 kB).
 */
export interface KubeEvent {
  type: "Normal" | "Warning";
  reason: string;
  action: string;
  note: string;
}

/**
 * Record a Kubernetes Event. Fire-and-forget: the executor hands it to the recorder (aggregated
 * and rate-limited like client-go's, sent from a bounded queue) and never waits for it, so it
 * counts as succeeded at once. Added by `reconcile` (src/core/events/conditions.ts), not by the rules.
 */
export interface RecordEventAction extends ActionBase {
  type: "recordEvent";
  /** The Agent the Event is about (a preempted run's Event is about the victim). */
  regarding: AgentRef;
  event: KubeEvent;
}

/** The failure kinds of controller_run_failures_total (the required four + docs/decisions.md D-18). */
export type FailureKind =
  | "missing_ref"
  | "job_failed"
  | "output_unavailable"
  | "preempted"
  | "invalid_spec"
  | "batch_failed"
  | "batch_timeout"
  | "job_rejected"
  | "reconcile_error";

/** The execution label of the cost metrics: a batch run that fell back to a Job is `batch_fallback`. */
export type CostExecution = "interactive" | "realtime" | "batch" | "batch_fallback";

export type MetricObservation =
  | { name: "controller_runs_completed_total"; labels: { phase: "Succeeded" | "Failed"; exit_code: string } }
  | {
      name: "controller_run_tokens_total";
      labels: {
        station: string;
        model: string;
        execution: CostExecution;
        type: "input" | "output" | "cache_read" | "cache_write";
      };
      value: number;
    }
  | {
      name: "controller_run_cost_usd_total";
      labels: { station: string; model: string; execution: CostExecution };
      value: number;
    }
  | { name: "controller_run_unpriced_models_total"; labels: { station: string; model: string } }
  | { name: "controller_run_duration_seconds"; labels: { phase: "Succeeded" | "Failed" }; value: number }
  | { name: "controller_run_queue_seconds"; value: number }
  | { name: "controller_run_failures_total"; labels: { kind: FailureKind } }
  | { name: "controller_batch_cleanup_failures_total" };

/**
 * Add a finished run's cost to its Station's status.spend (the budget's record, docs/cost-and-budgets.md):
 * read the Station, add the entry unless one for the same Agent uid is there, drop what left the
 * window, write the status guarded by the Station's resourceVersion, re-reading on a conflict.
 * Idempotent, so it runs before the Agent's terminal patch: a patch that conflicts is recomputed
 * and records the same entry again, which changes nothing.
 */
export interface RecordSpendAction extends ActionBase {
  type: "recordSpend";
  station: { namespace: string; name: string };
  entry: { agent: string; completedAt: string; costUSD: string };
  /** The budget's window in ms, for dropping entries that left it. */
  windowMs: number;
}

/** Record one metric observation (counter +1 or + `value`, or histogram observe `value`). */
export interface RecordMetricAction extends ActionBase {
  type: "recordMetric";
  metric: MetricObservation;
}

export type Action =
  | CreateJobAction
  | PatchStatusAction
  | DeleteAgentAction
  | DeleteJobAction
  | AddFinalizerAction
  | RemoveFinalizerAction
  | SubmitBatchAction
  | PollBatchAction
  | CancelBatchAction
  | CleanupBatchAction
  | DiscardUploadAction
  | EmitSinkEventsAction
  | RecordMetricAction
  | ReportWaitingAction
  | RecordEventAction
  | RecordSpendAction;

export type ActionType = Action["type"];

/**
 * Actions that change cluster or provider state: not metrics, sink events, Kubernetes Events,
 * waiting reports or batch polls.
 */
export function isWrite(action: Action): boolean {
  return (
    action.type !== "recordMetric" &&
    action.type !== "emitSinkEvents" &&
    action.type !== "pollBatch" &&
    action.type !== "reportWaiting" &&
    action.type !== "recordEvent"
  );
}
