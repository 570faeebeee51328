/**
 * The agent-phase lifecycle events the supervisor emits (docs/events.md#lifecycle-events): one `agent/started` once
 * the process exists, and exactly one terminal event per run.
 */
import { type LifecycleEvent, lifecycleEvent } from "../../sinks/lifecycle.js";
import type { ChildOutcome } from "./child-run.js";

export function agentStarted(): LifecycleEvent {
  return lifecycleEvent("agent", "started");
}

/** argv[0] is not an executable on PATH. */
export function agentNotFound(): LifecycleEvent {
  return lifecycleEvent("agent", "failed", { reason: "not-found" });
}

/** The vendor's CLI could not be set up (its config files could not be written). */
export function agentSetupFailed(): LifecycleEvent {
  return lifecycleEvent("agent", "failed", { reason: "setup" });
}

/** The process could not be started. */
export function agentSpawnFailed(): LifecycleEvent {
  return lifecycleEvent("agent", "failed", { reason: "spawn" });
}

/** `agent/succeeded exitCode=0`, `agent/failed exitCode=n`, or with `reason=deadline` (docs/decisions.md D-35). */
export function agentEnded(outcome: Exclude<ChildOutcome, { kind: "spawn-failed" }>): LifecycleEvent {
  if (outcome.kind === "deadline") {
    return lifecycleEvent("agent", "failed", { reason: "deadline", exitCode: outcome.exitCode });
  }
  return outcome.exitCode === 0
    ? lifecycleEvent("agent", "succeeded", { exitCode: 0 })
    : lifecycleEvent("agent", "failed", { exitCode: outcome.exitCode });
}
