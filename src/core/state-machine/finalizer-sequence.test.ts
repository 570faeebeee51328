/**
 * The finalizer rules over whole cleanup sequences of an OpenAI batch Agent deleted in flight: the
 * batch memory the executor leaves after each provider call, reconcile by reconcile, with the
 * Agent's batchCleanupAttempts carried forward. A try made while the batch is still settling is not
 * counted; 5 counted failures release the finalizer anyway; a batch unsettled 48 h after startedAt
 * is stuck and its tries count (docs/batch-runs.md#timeouts-delete-limits, docs/decisions.md D-103).
 */
import { describe, expect, it } from "vitest";
import { input, iso, T0 } from "../../../test/support/core-builders.js";
import { batchDef, DAY, inFlight } from "../../../test/support/state-machine-rows.js";
import type { BatchMemory } from "../input.js";
import { decide } from "./reconcile.js";

/** The Agent is deleted 5 minutes after its batch was submitted (startedAt T0). */
const DELETED = T0 + 5 * 60_000;
const s = (seconds: number) => DELETED + seconds * 1000;

/** One reconcile: the batch memory it sees, the finalizer rule that fires, and whether it counts a failure. */
interface Step {
  /** Seconds since the delete. */
  at: number;
  batch: BatchMemory;
  rule: string;
  counted?: boolean;
  released?: boolean;
}

const refused = (at: number): BatchMemory => ({
  lastCleanupAt: s(at),
  cleanupRetryAfterMs: 30_000,
  cleanupResult: { state: "cancel_failed", error: "openai POST /v1/batches/b/cancel: HTTP 500" },
});
const waitAfterRefusal = (at: number): BatchMemory => ({ lastCleanupAt: s(at), cleanupRetryAfterMs: 30_000 });
/** Cancel accepted at 60 s: the batch settles (cancelling) from then on. */
const settling = (lastCleanupAt: number): BatchMemory => ({
  cancelledAt: s(60),
  settling: true,
  lastCleanupAt: s(lastCleanupAt),
});
const readFailed = (at: number): BatchMemory => ({
  ...settling(at),
  cleanupResult: { state: "failed", error: "openai GET /v1/batches/b: HTTP 500", settleUnseen: true },
});
const notSettled = (at: number): BatchMemory => ({
  ...settling(at),
  cleanupResult: { state: "not_settled" },
});
/** Past the settle check (the batch is cancelled): a file delete failed, a real failure. */
const deleteFailed = (at: number): BatchMemory => ({
  cancelledAt: s(60),
  lastCleanupAt: s(at),
  cleanupResult: { state: "failed", error: "openai: 1 of 1 batch files not deleted: HTTP 500" },
});
const afterDeleteFailed = (at: number): BatchMemory => ({ cancelledAt: s(60), lastCleanupAt: s(at) });

/** Refused at 0 s and 30 s (Retry-After 30), accepted at 60 s. */
const cancelRefusedTwiceThenAccepted: Step[] = [
  { at: 0, batch: {}, rule: "cancel-then-cleanup" },
  { at: 0, batch: refused(0), rule: "cleanup-failed", counted: true },
  { at: 15, batch: waitAfterRefusal(0), rule: "finalizer-wait" },
  { at: 30, batch: waitAfterRefusal(0), rule: "cancel-then-cleanup" },
  { at: 30, batch: refused(30), rule: "cleanup-failed", counted: true },
  { at: 60, batch: waitAfterRefusal(30), rule: "cancel-then-cleanup" },
];

const SEQUENCES: { name: string; startedAt?: number; steps: Step[]; attempts: number }[] = [
  {
    name: "cancel refused twice then accepted; reads of the cancelling batch fail 3 times, then it settles: released when its files are gone, 2 failures",
    steps: [
      ...cancelRefusedTwiceThenAccepted,
      { at: 60, batch: readFailed(60), rule: "cleanup-not-settled" },
      { at: 75, batch: settling(60), rule: "cleanup" },
      { at: 75, batch: readFailed(75), rule: "cleanup-not-settled" },
      { at: 90, batch: settling(75), rule: "cleanup" },
      { at: 90, batch: readFailed(90), rule: "cleanup-not-settled" },
      { at: 105, batch: settling(90), rule: "cleanup" },
      { at: 105, batch: notSettled(105), rule: "cleanup-not-settled" },
      { at: 120, batch: settling(105), rule: "cleanup" },
      { at: 120, batch: readFailed(120), rule: "cleanup-not-settled" },
      { at: 660, batch: settling(645), rule: "cleanup" },
      {
        at: 660,
        batch: { ...settling(660), cleanupResult: { state: "done" } },
        rule: "cleanup-done",
        released: true,
      },
    ],
    attempts: 2,
  },
  {
    name: "settled, then its file deletes keep failing: the 3 real failures reach 5 and release the finalizer",
    steps: [
      ...cancelRefusedTwiceThenAccepted,
      { at: 60, batch: notSettled(60), rule: "cleanup-not-settled" },
      { at: 660, batch: settling(645), rule: "cleanup" },
      { at: 660, batch: deleteFailed(660), rule: "cleanup-failed", counted: true },
      { at: 675, batch: afterDeleteFailed(660), rule: "cleanup" },
      { at: 675, batch: deleteFailed(675), rule: "cleanup-failed", counted: true },
      { at: 690, batch: afterDeleteFailed(675), rule: "cleanup" },
      { at: 690, batch: deleteFailed(690), rule: "cleanup-failed", counted: true, released: true },
    ],
    attempts: 5,
  },
  {
    name: "still cancelling 48 h after startedAt: stuck, its failed reads count and release the finalizer at 5",
    startedAt: DELETED - 2 * DAY,
    steps: [
      ...cancelRefusedTwiceThenAccepted,
      { at: 60, batch: readFailed(60), rule: "cleanup-failed", counted: true },
      { at: 75, batch: settling(60), rule: "cleanup" },
      { at: 75, batch: notSettled(75), rule: "cleanup-failed", counted: true },
      { at: 90, batch: settling(75), rule: "cleanup" },
      { at: 90, batch: readFailed(90), rule: "cleanup-failed", counted: true, released: true },
    ],
    attempts: 5,
  },
];

describe("finalizer over a cleanup sequence (OpenAI, deleted in flight)", () => {
  it.each(SEQUENCES)("$name", ({ steps, startedAt, attempts }) => {
    const agent = inFlight({
      batchId: "b",
      batchProvider: "openai",
      startedAt: iso(startedAt ?? T0),
    })
      .deleting(DELETED)
      .build();
    const definition = batchDef()
      .spec({ model: "gpt-5-mini", resources: { secrets: [{ name: "OPENAI_API_KEY", ref: "openai-key" }] } })
      .build();
    let counted = 0;
    let released = false;
    for (const step of steps) {
      expect(released, `finalizer already removed before the step at ${step.at} s`).toBe(false);
      const d = decide(input({ agent, definition, batch: step.batch, now: s(step.at) }));
      const where = `at ${step.at} s`;
      expect(d.rules.at(-1), where).toBe(step.rule);
      const countedNow = d.actions.some((a) => a.id === "metric-cleanup-failure");
      expect(countedNow, where).toBe(step.counted ?? false);
      for (const a of d.actions) {
        const attempts = a.type === "patchStatus" ? a.status.batchCleanupAttempts : undefined;
        if (typeof attempts === "number") agent.status = { ...agent.status, batchCleanupAttempts: attempts };
      }
      if (countedNow) counted++;
      released = d.actions.some((a) => a.type === "removeFinalizer");
      expect(released, where).toBe(step.released ?? false);
    }
    expect(released).toBe(true);
    expect(agent.status?.batchCleanupAttempts).toBe(attempts);
    expect(counted).toBe(attempts);
  });
});
