/**
 * The event lists the executor hands to SinkDispatcher.deliver for a batch run (docs/events.md#what-a-listener-sees-for-a-batch-run).
 */
import type { SinkItem } from "./dispatcher.js";
import { batchDisabled, batchFailed, batchStarted, batchSucceeded, batchTimedOut } from "./lifecycle.js";

/**
 * After the completing patch: every CLI line of the result (uncapped; select applies), then
 * the terminal event — agent/succeeded exitCode 0, or agent/failed exitCode 1 batch_failed.
 */
export function batchEndEvents(lines: readonly string[], outcome: "succeeded" | "failed"): SinkItem[] {
  return [
    ...lines.map((line): SinkItem => ({ type: "cliLine", line })),
    { type: "lifecycle", event: outcome === "succeeded" ? batchSucceeded() : batchFailed() },
  ];
}

/** After the submit patch (Running, batchId, batchProvider). */
export function batchStartEvents(): SinkItem[] {
  return [{ type: "lifecycle", event: batchStarted() }];
}

/** After the timeout patch: fail ends the run, fallback does not. */
export function batchTimeoutEvents(onTimeout: "fail" | "fallback"): SinkItem[] {
  return [{ type: "lifecycle", event: batchTimedOut(onTimeout) }];
}

/** After the patch that fails an in-flight Agent because batch was turned off (docs/decisions.md D-37). */
export function batchDisabledEvents(): SinkItem[] {
  return [{ type: "lifecycle", event: batchDisabled() }];
}
