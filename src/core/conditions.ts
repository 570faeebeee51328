/**
 * What `kubectl describe agent` and `kubectl wait` read (docs/decisions.md D-110): the Agent's
 * `status.conditions` in metav1.Condition form and the Kubernetes Events of its transitions.
 * Pure: `report()` is the last step of `reconcile`, applied to what the rule tables decided.
 *
 * Conditions are a function of the Agent's phase and status as they will be after this pass's
 * status patch, its queue position, the rule's "waiting because …" (`reportWaiting`), its failure
 * kind and `metadata.generation`. They ride in the status patch the rules already emit; only an
 * Agent that waits (a Station slot, a retried create or submit) or that lacks the conditions of
 * its phase gets a patch of its own, and only when something in them changed. A terminal Agent is
 * never touched (terminal → terminal is a no-op), so each write happens once per change.
 *
 * Events follow the patch that records the transition they describe (`dependsOn`), so a patch
 * that loses a conflict reports nothing and the next reconcile, recomputing from fresh state,
 * reports it once.
 */
import type {
  Action,
  CreateJobAction,
  DeleteAgentAction,
  FailureKind,
  KubeEvent,
  PatchStatusAction,
  RecordEventAction,
  ReportWaitingAction,
} from "./actions.js";
import { type QueuePosition, queuePosition } from "./concurrency.js";
import type { ReconcileInput } from "./input.js";
import {
  type AgentCondition,
  type AgentPhase,
  type AgentRef,
  type AgentStatus,
  agentRef,
  isTerminal,
  phaseOf,
} from "./types.js";

export type ConditionType = "Queued" | "Ready" | "Complete" | "Failed";

/** A condition without its bookkeeping (time, generation). */
export interface DesiredCondition {
  type: ConditionType;
  status: AgentCondition["status"];
  reason: string;
  message: string;
  /** Written only when the Agent already carries this type (a Queued that ends). */
  onlyIfPresent?: boolean;
}

/** metav1.Condition.message limit. */
export const CONDITION_MESSAGE_MAX_BYTES = 32768;
/**
 * Queue positions are exact up to here. Beyond, the message does not change as the queue moves,
 * which bounds the status writes one freed slot causes to this many waiting Agents.
 */
export const QUEUE_POSITION_DETAIL = 20;

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
    when: "a rule reports why the run waits (`reportWaiting`, e.g. JobCreateRetrying, BatchSubmitRetrying, BudgetExhausted) with a new message; Normal when no retry is pending",
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

/** Why the Agent does not progress, as the rule and the queue tell it. */
export type Waiting =
  | { kind: "slot"; queue: QueuePosition }
  | { kind: "fallback-slot"; limit: number }
  | { kind: "other"; reason: string; message: string; eventType: KubeEvent["type"] };

/** The run as the conditions describe it: the status after this pass's patch, plus context. */
export interface RunView {
  phase: AgentPhase;
  status: AgentStatus;
  station: string;
  waiting?: Waiting;
  failureKind?: FailureKind;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "at most N running" (0 = unlimited never waits, but say so plainly). */
const limitText = (limit: number) => (limit > 0 ? `at most ${limit} running` : "no limit");

export function queueMessage(q: QueuePosition, station: string): string {
  const where =
    q.position > QUEUE_POSITION_DETAIL
      ? `beyond position ${QUEUE_POSITION_DETAIL}`
      : `position ${q.position} of ${q.waiting}`;
  return `waiting for a free slot on Station ${station}: ${where} in its queue (${limitText(q.limit)})`;
}

/** "queued behind N runs": the Running ones plus the waiting ones ahead. */
function queuedNote(q: QueuePosition, station: string): string {
  const ahead = plural(q.running + q.position - 1, "run");
  return `queued behind ${ahead} on Station ${station} (position ${q.position} of ${q.waiting}, ${limitText(q.limit)})`;
}

function fallbackQueueMessage(limit: number, station: string): string {
  return `the batch timed out; its fallback Job waits for a free slot on Station ${station} (${limitText(limit)})`;
}

/** `job_failed` → `JobFailed`: a condition reason from a failure kind. */
export function reasonFromKind(kind: FailureKind | undefined): string {
  if (!kind) return "Failed";
  return kind
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

/** A metav1.Condition reason: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`. */
export function conditionReason(raw: string): string {
  const cleaned = raw.replace(/[^A-Za-z0-9_,:]/g, "").replace(/[,:]+$/, "");
  return /^[A-Za-z]/.test(cleaned) ? cleaned.slice(0, 1024) : `Waiting${cleaned}`.slice(0, 1024);
}

function capBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const out: string[] = [];
  let size = Buffer.byteLength("…");
  for (const ch of text) {
    size += Buffer.byteLength(ch);
    if (size > max) break;
    out.push(ch);
  }
  return `${out.join("")}…`;
}

function runningMessage(s: AgentStatus): string {
  if (s.batchId && s.batchFallback && s.jobName)
    return `the batch timed out; running in fallback Job ${s.jobName}`;
  if (s.batchId && !s.batchFallback)
    return `batch ${s.batchId} in flight at ${s.batchProvider ?? "the provider"}`;
  return `running in Job ${s.jobName ?? ""}`.trim();
}

/** The conditions the run should carry. Empty: nothing to say (e.g. a Pending Agent about to start). */
export function desiredConditions(v: RunView): DesiredCondition[] {
  const s = v.status;
  const endQueue = (reason: string, message: string): DesiredCondition => ({
    type: "Queued",
    status: "False",
    reason,
    message,
    onlyIfPresent: true,
  });
  const w = v.waiting;
  if (v.phase === "Succeeded") {
    return [
      endQueue("Started", "the run left the queue"),
      { type: "Ready", status: "False", reason: "Succeeded", message: "the run has finished" },
      {
        type: "Complete",
        status: "True",
        reason: "Succeeded",
        // A partial read-back is said too (e.g. run output unavailable: pod garbage-collected).
        message: `the run succeeded (exit code ${s.exitCode ?? 0})${s.failureReason ? `; ${s.failureReason}` : ""}`,
      },
    ];
  }
  if (v.phase === "Failed") {
    const why = s.failureReason || `the run failed (exit code ${s.exitCode ?? 1})`;
    return [
      endQueue(s.startedAt ? "Started" : "Failed", s.startedAt ? "the run left the queue" : why),
      { type: "Ready", status: "False", reason: "Failed", message: why },
      { type: "Failed", status: "True", reason: reasonFromKind(v.failureKind), message: why },
    ];
  }
  if (w?.kind === "slot" || w?.kind === "fallback-slot") {
    const message =
      w.kind === "slot" ? queueMessage(w.queue, v.station) : fallbackQueueMessage(w.limit, v.station);
    return [
      { type: "Queued", status: "True", reason: "WaitingForSlot", message },
      { type: "Ready", status: "False", reason: "Queued", message },
    ];
  }
  if (w?.kind === "other") {
    // Creates and submits are retried only once the run was admitted.
    return [
      endQueue("Admitted", `admitted to Station ${v.station}`),
      { type: "Ready", status: "False", reason: conditionReason(w.reason), message: w.message },
    ];
  }
  if (v.phase === "Running") {
    return [
      endQueue("Started", "the run left the queue"),
      { type: "Ready", status: "True", reason: "Running", message: runningMessage(s) },
    ];
  }
  return [];
}

/**
 * meta.SetStatusCondition over a list: each desired type replaces its entry, keeping
 * `lastTransitionTime` when the status did not change; other types are kept as they are.
 */
export function mergeConditions(
  current: AgentCondition[] | undefined,
  desired: DesiredCondition[],
  now: string,
  generation: number | undefined,
): AgentCondition[] {
  const out = [...(current ?? [])];
  for (const d of desired) {
    const i = out.findIndex((c) => c.type === d.type);
    if (i < 0 && d.onlyIfPresent) continue;
    const before = i >= 0 ? out[i] : undefined;
    const next: AgentCondition = {
      type: d.type,
      status: d.status,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: before && before.status === d.status ? before.lastTransitionTime : now,
      reason: conditionReason(d.reason),
      message: capBytes(d.message, CONDITION_MESSAGE_MAX_BYTES),
    };
    if (i >= 0) out[i] = next;
    else out.push(next);
  }
  return out;
}

const CONDITION_FIELDS = [
  "type",
  "status",
  "observedGeneration",
  "lastTransitionTime",
  "reason",
  "message",
] as const;

/**
 * Field by field: the API server returns each condition's keys in its own order, so comparing
 * serialisations would see a change in every read-back and patch the same conditions again.
 */
function sameConditions(current: AgentCondition[] | undefined, b: AgentCondition[]): boolean {
  const a = current ?? [];
  return a.length === b.length && b.every((c, i) => CONDITION_FIELDS.every((f) => a[i]?.[f] === c[f]));
}

const conditionOf = (list: AgentCondition[] | undefined, type: ConditionType) =>
  list?.find((c) => c.type === type);

// ---------------------------------------------------------------------------------------------
// The report step.

/** The status after a merge patch (`null` removes a field). */
function patched(
  status: AgentStatus | undefined,
  patch: PatchStatusAction["status"] | undefined,
): AgentStatus {
  const out: Record<string, unknown> = { ...status };
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out as AgentStatus;
}

function failureKindOf(actions: Action[]): FailureKind | undefined {
  for (const a of actions) {
    if (
      a.type === "recordMetric" &&
      a.metric.name === "controller_run_failures_total" &&
      a.metric.labels.kind !== "preempted"
    )
      return a.metric.labels.kind;
  }
  return undefined;
}

function waitingOf(input: ReconcileInput, rules: string[], actions: Action[]): Waiting | undefined {
  const { agent, station } = input;
  const reported = actions.find((a): a is ReportWaitingAction => a.type === "reportWaiting");
  if (reported) {
    return {
      kind: "other",
      reason: reported.reason,
      message: reported.message,
      // A retry after an error is a Warning; a plain wait is not.
      eventType: reported.retryAt !== undefined ? "Warning" : "Normal",
    };
  }
  if (!station) return undefined;
  if (rules.includes("wait-for-slot"))
    return {
      kind: "slot",
      queue: queuePosition(agent, station, input.stationAgents, input.pendingCreations),
    };
  if (rules.includes("fallback-wait")) {
    const q = queuePosition(agent, station, input.stationAgents, input.pendingCreations);
    return { kind: "fallback-slot", limit: q.limit };
  }
  return undefined;
}

interface Built {
  events: RecordEventAction[];
  ids: Set<string>;
}

function eventAction(b: Built, id: string, regarding: AgentRef, event: KubeEvent, dependsOn: string[]): void {
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

/** The rules' actions plus the conditions in the status patch and the Kubernetes Events. */
export function report(
  input: ReconcileInput,
  decision: { rules: string[]; actions: Action[] },
  /** `input.now` as metav1.Time. */
  nowTime: string,
): Action[] {
  const { agent } = input;
  const self = agentRef(agent);
  const station = agent.spec.stationRef;
  const b: Built = { events: [], ids: new Set(decision.actions.map((a) => a.id)) };
  const actions = [...decision.actions];

  // Preemption under Replace: the victim learns why it is deleted, the new run whom it replaced.
  for (const a of actions) {
    if (a.type !== "deleteAgent" || a.reason !== "preempt") continue;
    preemptEvents(b, a, self, station);
  }

  batchCleanupEvents(b, input, actions, self);

  const before = agent.status ?? {};
  const prePhase = phaseOf(agent);
  if (agent.metadata.deletionTimestamp || isTerminal(prePhase)) return [...actions, ...b.events];

  // The patch this pass writes to status (the transition's, if any).
  let patchIndex = actions.findIndex((a) => a.type === "patchStatus" && a.id === "patch-status");
  if (patchIndex < 0) patchIndex = actions.findIndex((a) => a.type === "patchStatus");
  const patch = patchIndex >= 0 ? (actions[patchIndex] as PatchStatusAction) : undefined;
  const after = patched(before, patch?.status);
  const phase = after.phase ?? "Pending";
  const waiting = waitingOf(input, decision.rules, actions);
  const desired = desiredConditions({
    phase,
    status: after,
    station,
    ...(waiting ? { waiting } : {}),
    ...(failureKindOf(actions) ? { failureKind: failureKindOf(actions) } : {}),
  });
  const merged = mergeConditions(before.conditions, desired, nowTime, agent.metadata.generation);
  const changed = !sameConditions(before.conditions, merged);

  let patchId: string | undefined = patch?.id;
  if (changed && patch) {
    actions[patchIndex] = { ...patch, status: { ...patch.status, conditions: merged } };
  } else if (changed && desired.length > 0) {
    patchId = "patch-status";
    let unique = patchId;
    for (let n = 2; b.ids.has(unique); n++) unique = `${patchId}-${n}`;
    patchId = unique;
    b.ids.add(patchId);
    actions.push({
      id: patchId,
      type: "patchStatus",
      agent: self,
      resourceVersion: agent.metadata.resourceVersion ?? "",
      // The PHASE column is never empty for an Agent that waits.
      status: { ...(before.phase ? {} : { phase: "Pending" }), conditions: merged },
    });
  }
  if (patchId === undefined) return [...actions, ...b.events];

  transitionEvents(b, {
    input,
    actions,
    self,
    station,
    before,
    after,
    prePhase,
    phase,
    merged,
    waiting,
    patchId,
  });
  return [...actions, ...b.events];
}

interface Transition {
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

function transitionEvents(b: Built, t: Transition): void {
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

function preemptEvents(b: Built, a: DeleteAgentAction, self: AgentRef, station: string): void {
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
function batchCleanupEvents(b: Built, input: ReconcileInput, actions: Action[], self: AgentRef): void {
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
