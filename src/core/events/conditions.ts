/**
 * The Agent's `status.conditions` in metav1.Condition form, what `kubectl describe agent` and
 * `kubectl wait` read (docs/decisions.md D-110). Pure: `report()` (report.ts) computes them as
 * the last step of `reconcile`, from what the rule tables decided.
 *
 * Conditions are a function of the Agent's phase and status as they will be after this pass's
 * status patch, its queue position, the rule's "waiting because …" (`reportWaiting`), its failure
 * kind and `metadata.generation`. They ride in the status patch the rules already emit; only an
 * Agent that waits (a Station slot, a retried create or submit) or that lacks the conditions of
 * its phase gets a patch of its own, and only when something in them changed. A terminal Agent is
 * never touched (terminal → terminal is a no-op), so each write happens once per change.
 */
import type { Action, FailureKind, KubeEvent } from "../actions.js";
import type { QueuePosition } from "../station-limits/concurrency.js";
import type { AgentCondition, AgentPhase, AgentStatus } from "../types.js";

export type ConditionType = "Queued" | "Ready" | "Complete" | "Failed" | "CostBounded";

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

/** "at most N running" (0 = unlimited never waits, but say so plainly). */
export const limitText = (limit: number) => (limit > 0 ? `at most ${limit} running` : "no limit");

export function queueMessage(q: QueuePosition, station: string): string {
  const where =
    q.position > QUEUE_POSITION_DETAIL
      ? `beyond position ${QUEUE_POSITION_DETAIL}`
      : `position ${q.position} of ${q.waiting}`;
  return `waiting for a free slot on Station ${station}: ${where} in its queue (${limitText(q.limit)})`;
}

export function fallbackQueueMessage(limit: number, station: string): string {
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

/** What a Running run is doing: its Ready message, and the note of its Started Event. */
export function runningMessage(s: AgentStatus): string {
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
  // docs/cost-and-budgets.md#a-bill-within-bounds: a run charged its bound says so where `kubectl wait` and describe look.
  const bounded: DesiredCondition[] =
    s.costSource === "bounded"
      ? [{ type: "CostBounded", status: "True", reason: "ChargedAtBound", message: s.costNote ?? "" }]
      : [];
  if (v.phase === "Succeeded") {
    return [
      ...bounded,
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
      ...bounded,
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
export function sameConditions(current: AgentCondition[] | undefined, b: AgentCondition[]): boolean {
  const a = current ?? [];
  return a.length === b.length && b.every((c, i) => CONDITION_FIELDS.every((f) => a[i]?.[f] === c[f]));
}

export const conditionOf = (list: AgentCondition[] | undefined, type: ConditionType) =>
  list?.find((c) => c.type === type);

/** The failure kind the rules counted (a preemption is the victim's, not this run's). */
export function failureKindOf(actions: Action[]): FailureKind | undefined {
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
