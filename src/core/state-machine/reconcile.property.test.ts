/**
 * Properties of reconcile over generated inputs:
 * - it is pure (same input → same actions; the input is not mutated);
 * - a terminal Agent gets no actions, except the batch finalizer's cleanup work;
 * - it is idempotent: executing its actions (a faithful simulation of the executor, provider
 *   results fed back as the module comment describes) and reconciling again converges to a state
 *   with no further writes, and no one-time effect (Job creation, batch submit, phase patch, sink
 *   event, delete, finalizer change) ever happens twice.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, station, T0 } from "../../../test/support/core-builders.js";
import { type Action, BATCH_CLEANUP_FINALIZER, isWrite } from "../actions.js";
import type { BatchPollResult } from "../batch-port.js";
import type { BatchMemory, JobObservation, PodObservation, ReconcileInput } from "../input.js";
import type { AgentStatus, StationSpec } from "../types.js";
import { isTerminal, phaseOf } from "../types.js";
import { isSettled, reconcile, settledAgentsWithWork } from "./reconcile.js";

type CleanupOutcome = NonNullable<BatchMemory["cleanupResult"]>;

interface World {
  input: ReconcileInput;
  pollOutcome: BatchPollResult;
  cleanupOutcome: CleanupOutcome;
}

const MIN = 60_000;
const time = fc.integer({ min: -3 * 24 * 60, max: 0 }).map((m) => T0 + m * MIN);
const phase = fc.constantFrom<AgentStatus["phase"] | undefined>(
  undefined,
  "Pending",
  "Running",
  "Succeeded",
  "Failed",
);

const otherAgent = (i: number) =>
  fc
    .record({ phase, started: time, completed: time, created: time })
    .map(({ phase: p, started, completed, created }) => {
      const b = agent(`other-${i}`)
        .created(created)
        .rv(String(10 + i));
      if (p === "Running") b.running(started);
      if (p === "Succeeded" || p === "Failed") b.running(started).completed(p, completed);
      return b.build();
    });

const statusArb: fc.Arbitrary<AgentStatus> = fc.record(
  {
    phase,
    startedAt: time.map(iso),
    jobName: fc.constantFrom("agent-job-run-1", ""),
    batchId: fc.constantFrom("msgbatch_1"),
    batchProvider: fc.constantFrom("anthropic"),
    batchFallback: fc.boolean(),
    batchCleanupAttempts: fc.integer({ min: 0, max: 6 }),
    completedAt: time.map(iso),
  },
  { requiredKeys: [] },
);

const jobArb: fc.Arbitrary<JobObservation | undefined> = fc.constantFrom(
  undefined,
  { found: false },
  { found: true, status: {} },
  { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
  {
    found: true,
    status: { conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] },
  },
);
const podArb: fc.Arbitrary<PodObservation | undefined> = fc.constantFrom(
  undefined,
  { found: false },
  { found: true, agentLog: { available: true, text: '{"type":"result","session_id":"s"}' } },
  { found: true, agentLog: { available: false } },
);
const pollArb: fc.Arbitrary<BatchPollResult> = fc.constantFrom<BatchPollResult>(
  { state: "in_progress" },
  { state: "ended", outcome: "succeeded", lines: ['{"type":"result"}'] },
  { state: "ended", outcome: "failed", lines: [], failureReason: "batch request expired" },
);
const cleanupArb: fc.Arbitrary<CleanupOutcome> = fc.constantFrom<CleanupOutcome>(
  { state: "done" },
  { state: "not_settled" },
  { state: "failed", error: "HTTP 500" },
);
/** Absent three times out of four: most passes start from an empty memory. */
const rarely = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight: 1 });
const memoryArb: fc.Arbitrary<BatchMemory> = fc
  .record({
    submitted: rarely(fc.record({ batchId: fc.constant("msgbatch_1"), at: time })),
    lastPollAt: rarely(time),
    pollResult: rarely(pollArb),
    cancelledAt: rarely(time),
    lastCleanupAt: rarely(time),
    cleanupResult: rarely(cleanupArb),
  })
  .map((m) => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined)) as BatchMemory);

/** `value` four times out of five, so the generator reaches the deeper paths. */
const often = (value: boolean) => fc.integer({ min: 0, max: 4 }).map((n) => (n === 0 ? !value : value));

const worldArb: fc.Arbitrary<World> = fc
  .record({
    status: statusArb,
    finalizer: fc.boolean(),
    deleting: often(false),
    agentModel: fc.constantFrom(undefined, "gpt-5-mini", "opencode"),
    stationPresent: often(true),
    definitionPresent: often(true),
    execution: fc.constantFrom("interactive", "batch", "realtime") as fc.Arbitrary<
      "interactive" | "batch" | "realtime"
    >,
    onTimeout: fc.constantFrom("fail", "fallback") as fc.Arbitrary<"fail" | "fallback">,
    timeoutMinutes: fc.constantFrom(1, 60, 1440),
    policy: fc.constantFrom("Allow", "Forbid", "Replace") as fc.Arbitrary<StationSpec["concurrencyPolicy"]>,
    maxConcurrentRuns: fc.integer({ min: 0, max: 2 }),
    historyLimit: fc.integer({ min: 0, max: 2 }),
    others: fc.tuple(otherAgent(0), otherAgent(1), otherAgent(2)).chain((all) => fc.subarray(all)),
    pendingOthers: fc.subarray(["other-0", "other-1", "other-2"]),
    job: jobArb,
    pod: podArb,
    batch: memoryArb,
    batchEnabled: often(true),
    realtimeEnabled: fc.boolean(),
    pollSeconds: fc.constantFrom(0, 60),
    now: fc.integer({ min: 0, max: 3 * 24 * 60 }).map((m) => T0 + m * MIN),
    pollOutcome: pollArb,
    cleanupOutcome: cleanupArb,
  })
  .map((g) => {
    const b = agent().status(g.status);
    if (g.agentModel) b.spec({ model: g.agentModel });
    if (g.finalizer) b.finalizers("other.example/keep", BATCH_CLEANUP_FINALIZER);
    if (g.deleting) b.deleting();
    const def = definition().spec({
      execution: g.execution,
      batch: { onTimeout: g.onTimeout, timeoutMinutes: g.timeoutMinutes },
      resources: {
        secrets: [
          { name: "ANTHROPIC_API_KEY", ref: "a" },
          { name: "OPENAI_API_KEY", ref: "o" },
        ],
      },
      output: { sinks: [{ type: "http", url: "https://sink" }] },
    });
    const base = input();
    return {
      input: {
        ...base,
        agent: b.build(),
        station: g.stationPresent
          ? station()
              .spec({
                concurrencyPolicy: g.policy,
                maxConcurrentRuns: g.maxConcurrentRuns,
                successfulRunsHistoryLimit: g.historyLimit,
                failedRunsHistoryLimit: g.historyLimit,
              })
              .build()
          : undefined,
        definition: g.definitionPresent ? def.build() : undefined,
        job: g.job,
        pod: g.pod,
        stationAgents: g.others,
        pendingCreations: g.pendingOthers,
        batch: g.batch,
        settings: {
          ...base.settings,
          batchEnabled: g.batchEnabled,
          realtimeEnabled: g.realtimeEnabled,
          batchPollSeconds: g.pollSeconds,
        },
        now: g.now,
      },
      pollOutcome: g.pollOutcome,
      cleanupOutcome: g.cleanupOutcome,
    };
  });

/** Executes actions like the executor would, all succeeding. Returns the next input, or undefined when the Agent is gone. */
function execute(world: World, actions: Action[], effects: string[]): ReconcileInput | undefined {
  const next: ReconcileInput = structuredClone(world.input);
  // cleanupResult is one-shot: it was consumed by the reconcile that produced these actions.
  delete next.batch.cleanupResult;
  const self = next.agent;
  let gone = false;
  let rv = Number(self.metadata.resourceVersion ?? "0");
  const bump = () => {
    rv += 1;
    self.metadata.resourceVersion = String(rv);
  };
  for (const a of actions) {
    switch (a.type) {
      case "patchStatus": {
        const status: Record<string, unknown> = { ...self.status };
        for (const [k, v] of Object.entries(a.status)) {
          if (v === null) delete status[k];
          else status[k] = v;
        }
        self.status = status as AgentStatus;
        if (a.status.phase) effects.push(`phase:${a.status.phase}`);
        bump();
        break;
      }
      case "createJob":
        effects.push(`createJob:${a.agent.name}`);
        next.pendingCreations = [...next.pendingCreations, a.agent.name];
        if (!next.job?.found) next.job = { found: true, status: {} };
        break;
      case "deleteAgent":
        effects.push(`delete:${a.agent.name}`);
        if (a.agent.name === self.metadata.name) {
          if ((self.metadata.finalizers ?? []).length > 0) self.metadata.deletionTimestamp = iso(next.now);
          else gone = true;
        } else {
          next.stationAgents = next.stationAgents.filter((o) => o.metadata.name !== a.agent.name);
        }
        break;
      case "addFinalizer":
        effects.push("addFinalizer");
        self.metadata.finalizers = [...(self.metadata.finalizers ?? []), a.finalizer];
        bump();
        break;
      case "removeFinalizer":
        effects.push("removeFinalizer");
        expect(self.metadata.finalizers?.[a.index]).toBe(a.finalizer);
        self.metadata.finalizers = (self.metadata.finalizers ?? []).filter((_, i) => i !== a.index);
        bump();
        if (self.metadata.deletionTimestamp && self.metadata.finalizers.length === 0) gone = true;
        break;
      case "submitBatch":
        effects.push(`submit:${a.agent.name}`);
        next.batch.submitted = { batchId: "msgbatch_1", at: next.now };
        next.pendingCreations = [...next.pendingCreations, a.agent.name];
        break;
      case "pollBatch":
        next.batch.lastPollAt = next.now;
        next.batch.pollResult = world.pollOutcome;
        break;
      case "cancelBatch":
        effects.push("cancel");
        next.batch.cancelledAt = next.now;
        break;
      case "cleanupBatch":
        effects.push("cleanup");
        next.batch.lastCleanupAt = next.now;
        next.batch.cleanupResult = world.cleanupOutcome;
        break;
      case "emitSinkEvents":
        effects.push(`event:${a.id}`);
        break;
      case "recordMetric":
        break;
      case "recordEvent":
        // A failed cleanup or cancel is reported each time it fails; every other Event once per transition.
        if (!["CleanupFailed", "CancelFailed"].includes(a.event.reason)) effects.push(`kevent:${a.id}`);
        break;
    }
  }
  return gone ? undefined : next;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

describe("reconcile properties", () => {
  it("is pure: same input, same actions, input untouched", () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const frozen = deepFreeze(structuredClone(w.input));
        expect(reconcile(frozen)).toEqual(reconcile(structuredClone(w.input)));
      }),
      { numRuns: 300 },
    );
  });

  it("a terminal Agent yields no actions, except its own history prune and the batch finalizer's cancel and cleanup work", () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        if (!isTerminal(phaseOf(w.input.agent))) return;
        // terminal-prune: a finished Agent beyond its Station's history limit deletes itself (docs/decisions.md D-105).
        const selfPrune = (a: Action) =>
          a.type === "deleteAgent" && a.reason === "prune" && a.agent.name === w.input.agent.metadata.name;
        const actions = reconcile(w.input).filter((a) => !selfPrune(a));
        const hasFinalizer = (w.input.agent.metadata.finalizers ?? []).includes(BATCH_CLEANUP_FINALIZER);
        if (!hasFinalizer) {
          expect(actions).toEqual([]);
          return;
        }
        for (const a of actions) {
          // A timed-out batch may still owe its cancel (docs/decisions.md D-102): retried until confirmed.
          const cleanupWork =
            a.type === "cleanupBatch" ||
            a.type === "cancelBatch" ||
            a.type === "removeFinalizer" ||
            (a.type === "patchStatus" && Object.keys(a.status).join() === "batchCleanupAttempts") ||
            (a.type === "recordMetric" && a.metric.name === "controller_batch_cleanup_failures_total") ||
            (a.type === "recordEvent" && ["CleanupFailed", "CancelFailed"].includes(a.event.reason));
          expect(cleanupWork, JSON.stringify(a)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("is idempotent: executing the actions converges to no writes, and no one-time effect repeats", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(worldArb, (w) => {
        const effects: string[] = [];
        let current: ReconcileInput | undefined = w.input;
        let passes = 0;
        while (current) {
          const actions = reconcile(current);
          if (!actions.some(isWrite) && !actions.some((a) => a.type === "pollBatch")) break;
          passes += 1;
          expect(
            passes,
            `no fixed point; last actions ${JSON.stringify(actions.map((a) => a.id))}`,
          ).toBeLessThan(8);
          current = execute({ ...w, input: current }, actions, effects);
        }
        const once = effects.filter((e) => e !== "cleanup");
        expect(once.length, `repeated effects: ${once.join(", ")}`).toBe(new Set(once).size);
        for (const e of effects) seen.add(e.replace(/:.*/, ""));
      }),
      { numRuns: 2000 },
    );
    // The generator must reach the interesting paths, or the property proves little.
    for (const kind of [
      "createJob",
      "submit",
      "phase",
      "event",
      "delete",
      "cancel",
      "cleanup",
      "addFinalizer",
      "removeFinalizer",
      "kevent",
    ]) {
      expect(seen, kind).toContain(kind);
    }
  });

  it("re-creating after a conflicted Running patch yields the identical Job (creation is idempotent)", () => {
    fc.assert(
      fc.property(worldArb, (w) => {
        const first = reconcile(w.input).find((a) => a.type === "createJob");
        if (!first || phaseOf(w.input.agent) !== "Pending") return;
        // The patch conflicted: nothing changed but our creation is now issued.
        const again = reconcile({
          ...w.input,
          pendingCreations: [...w.input.pendingCreations, "run-1"],
        }).find((a) => a.type === "createJob");
        expect(again).toEqual(first);
      }),
      { numRuns: 300 },
    );
  });
});

describe("settledAgentsWithWork: the poll's per-Station shortcut for settled Agents", () => {
  const row = fc.record({
    phase,
    completedMin: fc.integer({ min: 0, max: 6 }),
    deleting: fc.boolean(),
    finalizer: fc.constantFrom<string | undefined>(
      undefined,
      undefined,
      BATCH_CLEANUP_FINALIZER,
      "example.com/x",
    ),
    otherStation: fc.boolean(),
  });
  it("names exactly the settled Agents whose own reconcile returns actions", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 10 }), fc.nat(3), fc.nat(3), (rows, ok, failed) => {
        const list = rows.map((r, i) => {
          const b = agent(`a-${i}`);
          if (r.phase === "Running") b.running(T0);
          if (r.phase === "Succeeded" || r.phase === "Failed")
            b.completed(r.phase, T0 + r.completedMin * MIN);
          if (r.deleting) b.deleting();
          if (r.finalizer) b.finalizers(r.finalizer);
          if (r.otherStation) b.spec({ stationRef: "other" });
          return b.build();
        });
        const st = station().spec({ successfulRunsHistoryLimit: ok, failedRunsHistoryLimit: failed }).build();
        const withWork = new Set(settledAgentsWithWork(st, list));
        for (const a of list) {
          if (!isSettled(a)) {
            expect(withWork.has(a)).toBe(false);
            continue;
          }
          const own = a.spec.stationRef === st.metadata.name ? st : undefined;
          const actions = reconcile(
            input({ agent: a, station: own, stationAgents: list, now: T0 + 10 * MIN }),
          );
          expect(withWork.has(a), a.metadata.name).toBe(actions.length > 0);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("a settled Agent is finished, without finalizers and not being deleted", () => {
    expect(isSettled(agent().completed("Succeeded", T0).build())).toBe(true);
    expect(isSettled(agent().completed("Failed", T0).build())).toBe(true);
    expect(isSettled(agent().running(T0).build())).toBe(false);
    expect(isSettled(agent().build())).toBe(false);
    expect(isSettled(agent().completed("Succeeded", T0).deleting().build())).toBe(false);
    expect(isSettled(agent().completed("Succeeded", T0).finalizers("example.com/x").build())).toBe(false);
  });
});
