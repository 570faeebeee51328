/**
 * Lifecycle events in their wire form (docs/events.md#lifecycle-events): the run pod's programs build
 * theirs here, and the sink layer rewrites every lifecycle event it sends, the controller's batch-run
 * events included, into the wire key order.
 *
 * Key order is the wire order of docs/events.md#lifecycle-events: kind, phase, status, tool, reason, exitCode, turn.
 * Optional fields are omitted when empty; exitCode 0 is emitted.
 */
import type { LifecycleEvent, LifecyclePhase, LifecycleStatus } from "../core/actions.js";

export type { LifecycleEvent, LifecyclePhase, LifecycleStatus };

/** One event, its keys in wire order. */
export function lifecycleEvent(
  phase: LifecyclePhase,
  status: LifecycleStatus,
  extra: { tool?: string; reason?: string; exitCode?: number; turn?: number } = {},
): LifecycleEvent {
  const event: LifecycleEvent = { kind: "lifecycle", phase, status };
  if (extra.tool !== undefined && extra.tool !== "") event.tool = extra.tool;
  if (extra.reason !== undefined && extra.reason !== "") event.reason = extra.reason;
  if (extra.exitCode !== undefined) event.exitCode = extra.exitCode;
  if (extra.turn !== undefined) event.turn = extra.turn;
  return event;
}

/**
 * Rewrites a lifecycle event in the wire key order of docs/events.md#lifecycle-events, whatever order its producer
 * built it in; anything that is not a lifecycle event is returned unchanged.
 */
export function canonicalLifecycle(event: object): object {
  const e = event as Partial<LifecycleEvent> & Record<string, unknown>;
  if (e.kind !== "lifecycle" || typeof e.phase !== "string" || typeof e.status !== "string") return event;
  const { kind: _k, phase, status, tool, reason, exitCode, turn, ...rest } = e;
  return {
    ...lifecycleEvent(phase as LifecyclePhase, status as LifecycleStatus, {
      ...(typeof tool === "string" ? { tool } : {}),
      ...(typeof reason === "string" ? { reason } : {}),
      ...(typeof exitCode === "number" ? { exitCode } : {}),
      ...(typeof turn === "number" ? { turn } : {}),
    }),
    ...rest,
  };
}
