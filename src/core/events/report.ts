/**
 * src/core/events/: events and conditions. What a reconcile pass reports beside its rules' actions
 * (report.ts): the Agent's status.conditions (conditions.ts) and the Kubernetes Events of its
 * transitions (kube-events.ts).
 *
 * The last step of `reconcile`: the rules' actions plus the Agent's `status.conditions`
 * (conditions.ts) in this pass's status patch and the Kubernetes Events of its transitions
 * (kube-events.ts).
 */
import type { Action, PatchStatusAction, ReportWaitingAction } from "../actions.js";
import type { ReconcileInput } from "../input.js";
import { queuePosition } from "../station-limits/concurrency.js";
import { type AgentStatus, agentRef, isTerminal, phaseOf } from "../types.js";
import {
  desiredConditions,
  failureKindOf,
  mergeConditions,
  sameConditions,
  type Waiting,
} from "./conditions.js";
import { type Built, batchCleanupEvents, preemptEvents, transitionEvents } from "./kube-events.js";

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

function waitingOf(input: ReconcileInput, rules: string[], actions: Action[]): Waiting | undefined {
  const { agent, station } = input;
  const reported = actions.find((a): a is ReportWaitingAction => a.type === "reportWaiting");
  if (reported) {
    return {
      kind: "other",
      reason: reported.reason,
      message: reported.message,
      // A retry after an error is a Warning; a plain wait is not.
      eventType: reported.eventType ?? (reported.retryAt !== undefined ? "Warning" : "Normal"),
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
