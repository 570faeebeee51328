/**
 * The Kubernetes Events the controller records about an Agent: the catalogue (`AGENT_EVENTS`, which
 * docs/state-machine.md renders) and the Events of one reconcile pass, which `report()` (report.ts)
 * adds to the rules' actions.
 *
 * Events follow the patch that records the transition they describe (`dependsOn`), so a patch
 * that loses a conflict reports nothing and the next reconcile, recomputing from fresh state,
 * reports it once.
 */
import type { Action, CreateJobAction, DeleteAgentAction, KubeEvent, RecordEventAction } from "../actions.js";
import type { ReconcileInput } from "../input.js";
import type { QueuePosition } from "../station-limits/concurrency.js";
import type { AgentCondition, AgentPhase, AgentRef, AgentStatus } from "../types.js";
import {
  conditionOf,
  failureKindOf,
  fallbackQueueMessage,
  limitText,
  runningMessage,
  type Waiting,
} from "./conditions.js";

/**
 * Every Kubernetes Event the controller records about an Agent. The code builds its Events from
 * these entries and docs/state-machine.md renders them, so the two cannot drift.
 */
export const AGENT_EVENTS = {
  queued: {
    type: "Normal",
    reason: "Queued",
    action: "Queue",
    when: "the Agent starts waiting for a free slot on its Station (or its batch fallback Job does); the note says how many runs are ahead",
  },
  waiting: {
    type: "Warning",
    reason: "<the rule's reason>",
    action: "Wait",
    when: "a rule reports why the run waits (`reportWaiting`, e.g. JobCreateRetrying, BatchSubmitRetrying, BudgetExhausted, ProviderThrottled, ProviderLimitReached) with a new message; Normal when no retry is pending, and for ProviderLimitReached (a limit the Station declares)",
  },
  jobCreated: {
    type: "Normal",
    reason: "JobCreated",
    action: "CreateJob",
    when: "its Job was created (and the patch recording it landed)",
  },
  batchSubmitted: {
    type: "Normal",
    reason: "BatchSubmitted",
    action: "SubmitBatch",
    when: "its batch was submitted (batchId, provider)",
  },
  started: { type: "Normal", reason: "Started", action: "Start", when: "the Agent became Running" },
  preempted: {
    type: "Warning",
    reason: "Preempted",
    action: "Delete",
    when: "about the victim: concurrencyPolicy Replace deleted this Running run to make room",
  },
  preempting: {
    type: "Normal",
    reason: "Preempting",
    action: "Delete",
    when: "about the new run: it deleted the oldest Running run under Replace",
  },
  batchTimedOut: {
    type: "Warning",
    reason: "BatchTimedOut",
    action: "CancelBatch",
    when: "batch.timeoutMinutes passed: cancel requested, then Failed or the fallback Job",
  },
  cancelFailed: {
    type: "Warning",
    reason: "CancelFailed",
    action: "CancelBatch",
    when: "a cancel request failed (it is retried until the provider confirms it); each failed attempt",
  },
  cleanupFailed: {
    type: "Warning",
    reason: "CleanupFailed",
    action: "CleanupBatch",
    when: "deleting the batch's provider-side objects failed; each failed attempt, with the count toward 5",
  },
  costReportRejected: {
    type: "Warning",
    reason: "CostReportRejected",
    action: "Price",
    when: "the run's lines reported a cost above what its tokens could cost at the vendor's highest known rates; costUSD is priced from the tokens (docs/cost-and-budgets.md#a-bill-the-agent-cannot-inflate)",
  },
  modelUnpriced: {
    type: "Warning",
    reason: "ModelUnpriced",
    action: "Price",
    when: "the run used a model the price table has no price for: its tokens are priced at the vendor's highest known rates (status.unpricedModels); add a price (docs/cost-and-budgets.md#no-run-is-free)",
  },
  costNotReported: {
    type: "Warning",
    reason: "CostNotReported",
    action: "Price",
    when: "the run printed no result with its usage: its cost was summed from the model responses it streamed, or is unknown (status.costNote says which)",
  },
  costBounded: {
    type: "Warning",
    reason: "CostBounded",
    action: "Price",
    when: "the run was charged the most it could have cost in its wall time: its lines reported more tokens than that, its log was not read whole, or it left no readable usage (status.costNote says which; docs/cost-and-budgets.md#a-bill-within-bounds)",
  },
  statusFieldsDropped: {
    type: "Warning",
    reason: "StatusFieldsDropped",
    action: "Finish",
    when: "the API server refused the run's terminal status (a value outside the CRD's schema): it was written without the fields named, the note says which and the API server's words",
  },
  succeeded: { type: "Normal", reason: "Succeeded", action: "Complete", when: "the Agent became Succeeded" },
  failed: {
    type: "Warning",
    reason: "Failed",
    action: "Fail",
    when: "the Agent became Failed; the note is failureReason",
  },
} as const satisfies Record<string, Omit<KubeEvent, "note"> & { when: string }>;

type EventKey = keyof typeof AGENT_EVENTS;

function kubeEvent(key: Exclude<EventKey, "waiting">, note: string): KubeEvent {
  const { type, reason, action } = AGENT_EVENTS[key];
  return { type, reason, action, note };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "queued behind N runs": the Running ones plus the waiting ones ahead. */
function queuedNote(q: QueuePosition, station: string): string {
  const ahead = plural(q.running + q.position - 1, "run");
  return `queued behind ${ahead} on Station ${station} (position ${q.position} of ${q.waiting}, ${limitText(q.limit)})`;
}

export interface Built {
  events: RecordEventAction[];
  ids: Set<string>;
}

export function eventAction(
  b: Built,
  id: string,
  regarding: AgentRef,
  event: KubeEvent,
  dependsOn: string[],
): void {
  let unique = id;
  for (let n = 2; b.ids.has(unique); n++) unique = `${id}-${n}`;
  b.ids.add(unique);
  b.events.push({
    id: unique,
    type: "recordEvent",
    regarding,
    event,
    ...(dependsOn.length ? { dependsOn } : {}),
  });
}

export interface Transition {
  input: ReconcileInput;
  actions: Action[];
  self: AgentRef;
  station: string;
  before: AgentStatus;
  after: AgentStatus;
  prePhase: AgentPhase;
  phase: AgentPhase;
  merged: AgentCondition[];
  waiting: Waiting | undefined;
  patchId: string;
}

export function transitionEvents(b: Built, t: Transition): void {
  const dep = [t.patchId];
  const { before, after, self } = t;
  const queuedBefore = conditionOf(before.conditions, "Queued")?.status === "True";
  const queuedNow = conditionOf(t.merged, "Queued")?.status === "True";
  const w = t.waiting;
  if (queuedNow && !queuedBefore && (w?.kind === "slot" || w?.kind === "fallback-slot")) {
    const note =
      w.kind === "slot" ? queuedNote(w.queue, t.station) : fallbackQueueMessage(w.limit, t.station);
    eventAction(b, "kube-event-queued", self, kubeEvent("queued", note), dep);
  }

  if (t.waiting?.kind === "other") {
    const readyBefore = conditionOf(before.conditions, "Ready");
    const readyNow = conditionOf(t.merged, "Ready");
    if (readyNow && (readyBefore?.reason !== readyNow.reason || readyBefore?.message !== readyNow.message)) {
      eventAction(
        b,
        "kube-event-waiting",
        self,
        {
          type: t.waiting.eventType,
          reason: readyNow.reason,
          action: AGENT_EVENTS.waiting.action,
          note: t.waiting.message,
        },
        dep,
      );
    }
  }

  const created = t.actions.find((a): a is CreateJobAction => a.type === "createJob");
  const jobName = created?.job.metadata?.name ?? after.jobName ?? "";
  if (created) {
    eventAction(b, "kube-event-job-created", self, kubeEvent("jobCreated", `created Job ${jobName}`), [
      created.id,
      ...dep,
    ]);
  }
  if (after.batchId && !before.batchId) {
    eventAction(
      b,
      "kube-event-batch-submitted",
      self,
      kubeEvent(
        "batchSubmitted",
        `submitted batch ${after.batchId} to ${after.batchProvider ?? "the provider"}`,
      ),
      dep,
    );
  }
  if (t.phase === "Running" && t.prePhase !== "Running") {
    eventAction(
      b,
      "kube-event-started",
      self,
      kubeEvent("started", `the run started: ${runningMessage(after)}`),
      dep,
    );
  }
  const timedOutToFallback = after.batchFallback === true && before.batchFallback !== true;
  const timedOutToFailed = t.phase === "Failed" && failureKindOf(t.actions) === "batch_timeout";
  if (timedOutToFallback || timedOutToFailed) {
    eventAction(
      b,
      "kube-event-timed-out",
      self,
      kubeEvent(
        "batchTimedOut",
        `batch ${before.batchId ?? ""} at ${before.batchProvider ?? "the provider"} timed out; cancel requested${timedOutToFallback ? ", falling back to a Job" : ""}`,
      ),
      dep,
    );
  }
  if (after.unpricedModels !== undefined && before.unpricedModels === undefined) {
    eventAction(
      b,
      "kube-event-model-unpriced",
      self,
      kubeEvent(
        "modelUnpriced",
        `no price for ${after.unpricedModels.join(", ")}: its tokens are priced at the vendor's highest known rates (costUSD $${after.costUSD ?? "0"}, estimated)`,
      ),
      dep,
    );
  }
  if (after.costNote !== undefined && before.costNote === undefined) {
    if (after.costSource === "bounded")
      eventAction(b, "kube-event-cost-bounded", self, kubeEvent("costBounded", after.costNote), dep);
    else
      eventAction(b, "kube-event-cost-not-reported", self, kubeEvent("costNotReported", after.costNote), dep);
  }
  if (after.costReportRejected !== undefined && before.costReportRejected === undefined) {
    eventAction(
      b,
      "kube-event-cost-rejected",
      self,
      kubeEvent(
        "costReportRejected",
        `the run reported a cost of $${after.costReportRejected}, more than its tokens can cost at the vendor's highest known rates: not believed; costUSD is $${after.costUSD ?? "0"}, priced from its tokens`,
      ),
      dep,
    );
  }
  if (t.phase === "Succeeded") {
    eventAction(
      b,
      "kube-event-succeeded",
      self,
      kubeEvent("succeeded", `the run succeeded (exit code ${after.exitCode ?? 0})`),
      dep,
    );
  }
  if (t.phase === "Failed") {
    eventAction(
      b,
      "kube-event-failed",
      self,
      kubeEvent("failed", after.failureReason || `the run failed (exit code ${after.exitCode ?? 1})`),
      dep,
    );
  }
}

export function preemptEvents(b: Built, a: DeleteAgentAction, self: AgentRef, station: string): void {
  eventAction(
    b,
    `kube-event-preempted-${a.agent.name}`,
    a.agent,
    kubeEvent(
      "preempted",
      `deleted to make room for Agent ${self.name} (Station ${station}, concurrencyPolicy Replace)`,
    ),
    [a.id],
  );
  eventAction(
    b,
    `kube-event-replaced-${a.agent.name}`,
    self,
    kubeEvent(
      "preempting",
      `deleted Running Agent ${a.agent.name} to make room (Station ${station}, concurrencyPolicy Replace)`,
    ),
    [a.id],
  );
}

/**
 * The outcome of the provider call made just before this pass (one-shot, so reported once): a
 * failed cancel (retried until the provider confirms it) and a failed cleanup (counted toward the
 * 5 attempts after which the finalizer is released anyway).
 */
export function batchCleanupEvents(b: Built, input: ReconcileInput, actions: Action[], self: AgentRef): void {
  const { agent } = input;
  const r = input.batch.cleanupResult;
  const counted = actions.some(
    (a) => a.type === "recordMetric" && a.metric.name === "controller_batch_cleanup_failures_total",
  );
  const batch = `batch ${agent.status?.batchId || input.batch.submitted?.batchId || ""} at ${agent.status?.batchProvider ?? "the provider"}`;
  const attempt = counted ? ` (attempt ${(agent.status?.batchCleanupAttempts ?? 0) + 1} of 5)` : "";
  if (r?.state === "cancel_failed") {
    eventAction(
      b,
      "kube-event-cancel-failed",
      self,
      kubeEvent("cancelFailed", `cancel of ${batch} failed${attempt}; retrying: ${r.error}`),
      [],
    );
  } else if (counted) {
    const error = r?.state === "failed" ? r.error : "the batch has not settled 48 hours after it started";
    eventAction(
      b,
      "kube-event-cleanup-failed",
      self,
      kubeEvent("cleanupFailed", `cleanup of ${batch} failed${attempt}: ${error}`),
      [],
    );
  }
}
