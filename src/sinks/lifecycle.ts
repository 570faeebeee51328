/**
 * Lifecycle events the controller emits for batch runs (docs/events.md#lifecycle-events, docs/events.md#what-a-listener-sees-for-a-batch-run).
 *
 * Key order is the wire order of docs/events.md#lifecycle-events: kind, phase, status, tool, reason, exitCode, turn.
 * Optional fields are omitted when empty; exitCode 0 is emitted.
 */

export type LifecyclePhase = "init" | "agent" | "turn";
export type LifecycleStatus = "started" | "installing" | "running" | "succeeded" | "failed";

export interface LifecycleEvent {
  kind: "lifecycle";
  phase: LifecyclePhase;
  status: LifecycleStatus;
  tool?: string;
  reason?: string;
  exitCode?: number;
  turn?: number;
}

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

/** Controller reason slugs keep their underscored spelling (docs/events.md#lifecycle-events). */
export const BATCH_REASONS = {
  failed: "batch_failed",
  timeout: "batch_timeout",
  disabled: "batch_disabled",
} as const;

/** `agent/started`, once the batch is submitted and the Running patch succeeded. */
export function batchStarted(): LifecycleEvent {
  return lifecycleEvent("agent", "started");
}

/** `agent/succeeded exitCode 0`, after the completing patch. */
export function batchSucceeded(): LifecycleEvent {
  return lifecycleEvent("agent", "succeeded", { exitCode: 0 });
}

/** `agent/failed exitCode 1 reason batch_failed`: the batch errored, expired or was cancelled. */
export function batchFailed(): LifecycleEvent {
  return lifecycleEvent("agent", "failed", { reason: BATCH_REASONS.failed, exitCode: 1 });
}

/**
 * The timeout event. `fail` ends the run (`agent/failed exitCode 1 reason batch_timeout`);
 * `fallback` does not (`agent/running reason batch_timeout`): the fallback Job's own events follow.
 */
export function batchTimedOut(onTimeout: "fail" | "fallback"): LifecycleEvent {
  return onTimeout === "fallback"
    ? lifecycleEvent("agent", "running", { reason: BATCH_REASONS.timeout })
    : lifecycleEvent("agent", "failed", { reason: BATCH_REASONS.timeout, exitCode: 1 });
}

/** `agent/failed exitCode 1 reason batch_disabled`: batch turned off while in flight (docs/decisions.md D-37). */
export function batchDisabled(): LifecycleEvent {
  return lifecycleEvent("agent", "failed", { reason: BATCH_REASONS.disabled, exitCode: 1 });
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
