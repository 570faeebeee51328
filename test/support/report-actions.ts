/**
 * What `reconcile` reports about one Agent, for the tests of src/core/events/conditions.ts and
 * src/core/events/kube-events.ts: its status patch's conditions and its Kubernetes Events.
 */
import type { Action, PatchStatusAction, RecordEventAction } from "../../src/core/actions.js";
import type { ReconcileInput } from "../../src/core/input.js";
import { reconcile } from "../../src/core/state-machine/reconcile.js";
import type { AgentCondition } from "../../src/core/types.js";
import { input, iso, T0 } from "./core-builders.js";

export const NOW = T0 + 60_000;
export const NOW_ISO = iso(NOW);
export const FIN = "agents.re-cinq.com/batch-cleanup";

export const run = (over: Partial<ReconcileInput>) => reconcile(input({ now: NOW, ...over }));
export const statusPatch = (actions: Action[]) =>
  actions.find((a): a is PatchStatusAction => a.type === "patchStatus" && a.id === "patch-status");
export const conditionsOf = (actions: Action[]) => statusPatch(actions)?.status.conditions;
export const kubeEvents = (actions: Action[]) =>
  actions
    .filter((a): a is RecordEventAction => a.type === "recordEvent")
    .map((a) => ({
      regarding: a.regarding.name,
      type: a.event.type,
      reason: a.event.reason,
      note: a.event.note,
      dependsOn: a.dependsOn,
    }));
export const cond = (
  type: string,
  status: AgentCondition["status"],
  reason: string,
  message: string,
  lastTransitionTime = NOW_ISO,
): AgentCondition => ({ type, status, lastTransitionTime, reason, message });
