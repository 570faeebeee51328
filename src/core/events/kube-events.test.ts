/** The Kubernetes Events of an Agent's batch run and of a Replace preemption, as `reconcile` reports them. */
import { describe, expect, it } from "vitest";
import { agent, definition, iso, station, T0 } from "../../../test/support/core-builders.js";
import { cond, conditionsOf, FIN, kubeEvents, NOW, run } from "../../../test/support/report-actions.js";

describe("batch runs", () => {
  const batchDef = () => definition().batch();
  it("submitted: Ready True with the batch, BatchSubmitted and Started Events", () => {
    const actions = run({
      definition: batchDef().build(),
      agent: agent().finalizers(FIN).build(),
      batch: { submitted: { batchId: "msgbatch_1", at: NOW } },
    });
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "True", "Running", "batch msgbatch_1 in flight at anthropic"),
    ]);
    expect(kubeEvents(actions).map((e) => [e.reason, e.note])).toEqual([
      ["BatchSubmitted", "submitted batch msgbatch_1 to anthropic"],
      ["Started", "the run started: batch msgbatch_1 in flight at anthropic"],
    ]);
  });

  const inFlight = () =>
    agent()
      .finalizers(FIN)
      .status({
        phase: "Running",
        batchId: "msgbatch_1",
        batchProvider: "anthropic",
        startedAt: iso(NOW - 2 * 24 * 3600_000),
      })
      .build();

  it("timed out with onTimeout: fail: BatchTimedOut and Failed Events", () => {
    const actions = run({
      agent: inFlight(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    });
    expect(conditionsOf(actions)?.find((c) => c.type === "Failed")).toEqual(
      cond("Failed", "True", "BatchTimeout", "batch timed out"),
    );
    expect(kubeEvents(actions).map((e) => [e.type, e.reason, e.note])).toEqual([
      ["Warning", "BatchTimedOut", "batch msgbatch_1 at anthropic timed out; cancel requested"],
      ["Warning", "Failed", "batch timed out"],
    ]);
  });

  it("a cancel that failed (here counted: unsettled 48 h after the start) is a Warning Event with the error", () => {
    const failed = agent()
      .finalizers(FIN)
      .status({ ...inFlight().status, phase: "Failed", failureReason: "batch timed out" })
      .build();
    const actions = run({
      agent: failed,
      definition: batchDef().build(),
      batch: { cleanupResult: { state: "cancel_failed", error: "HTTP 503 overloaded" } },
    });
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Warning",
        reason: "CancelFailed",
        note: "cancel of batch msgbatch_1 at anthropic failed (attempt 1 of 5); retrying: HTTP 503 overloaded",
        dependsOn: undefined,
      },
    ]);
  });

  it("timed out with fallback at a full Station: Queued for the fallback Job, one Queued and one BatchTimedOut Event", () => {
    const actions = run({
      agent: inFlight(),
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      station: station().spec({ maxConcurrentRuns: 1 }).build(),
      stationAgents: [agent("other").running(T0).build()],
      batch: { lastPollAt: NOW },
    });
    const all = conditionsOf(actions) ?? [];
    expect(all.find((c) => c.type === "Ready")).toMatchObject({ status: "True", reason: "Running" });
    expect(kubeEvents(actions).map((e) => e.reason)).toEqual(["BatchTimedOut"]);
    // The next pass (fallback-wait) shows why the run waits.
    const after = agent()
      .finalizers(FIN)
      .status({ ...inFlight().status, batchFallback: true, conditions: all })
      .build();
    const next = run({
      agent: after,
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      station: station().spec({ maxConcurrentRuns: 1 }).build(),
      stationAgents: [agent("other").running(T0).build()],
    });
    const msg =
      "the batch timed out; its fallback Job waits for a free slot on Station st (at most 1 running)";
    expect(conditionsOf(next)).toEqual([
      cond("Ready", "False", "Queued", msg),
      cond("Queued", "True", "WaitingForSlot", msg),
    ]);
    expect(kubeEvents(next).map((e) => [e.reason, e.note])).toEqual([["Queued", msg]]);
  });

  it("a failed cleanup is a Warning Event with the provider's error and the attempt", () => {
    const actions = run({
      agent: agent()
        .finalizers(FIN)
        .status({ ...inFlight().status, phase: "Succeeded" })
        .build(),
      definition: batchDef().build(),
      batch: { cleanupResult: { state: "failed", error: "HTTP 500" } },
    });
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Warning",
        reason: "CleanupFailed",
        note: "cleanup of batch msgbatch_1 at anthropic failed (attempt 1 of 5): HTTP 500",
        dependsOn: undefined,
      },
    ]);
  });
});

describe("Replace", () => {
  it("the deleted run gets a Preempted Event, the new one a Preempting Event, each after the delete", () => {
    const actions = run({
      station: station().spec({ concurrencyPolicy: "Replace" }).build(),
      stationAgents: [
        agent("old")
          .running(T0 - 5000)
          .rv("7")
          .build(),
      ],
    });
    expect(kubeEvents(actions).slice(0, 2)).toEqual([
      {
        regarding: "old",
        type: "Warning",
        reason: "Preempted",
        note: "deleted to make room for Agent run-1 (Station st, concurrencyPolicy Replace)",
        dependsOn: ["preempt-old"],
      },
      {
        regarding: "run-1",
        type: "Normal",
        reason: "Preempting",
        note: "deleted Running Agent old to make room (Station st, concurrencyPolicy Replace)",
        dependsOn: ["preempt-old"],
      },
    ]);
  });
});
