import type { V1Job } from "@kubernetes/client-node";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, station, T0 } from "../../test/support/core-builders.js";
import { BATCH_CLEANUP_FINALIZER } from "../core/actions.js";
import type { ReconcileInput } from "../core/input.js";
import { jobState } from "../core/readback/readback.js";
import { buildJob } from "../core/run-job/job.js";
import { isSettled, reconcile } from "../core/state-machine/reconcile.js";
import type { Agent, AgentDefinition, AgentStatus, Station } from "../core/types.js";
import { jobFinishedAt, toJobObservation } from "./gather.js";
import { cachedAgent, cachedDefinition, cachedJob, cachedStation } from "./transform.js";

/** What the API server adds to every object: managedFields, kubectl's annotation, labels. */
function asServed<T extends { metadata?: object }>(obj: T): T {
  const o = structuredClone(obj) as T & { metadata: Record<string, unknown> };
  o.metadata = {
    generation: 1,
    ...o.metadata,
    labels: { team: "platform" },
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(obj),
      "example.com/owner": "someone",
    },
    managedFields: [
      {
        manager: "kubectl-client-side-apply",
        operation: "Update",
        apiVersion: "v1",
        time: iso(T0),
        fieldsType: "FieldsV1",
        fieldsV1: { "f:spec": { ".": {}, "f:stationRef": {} } },
      },
    ],
  };
  return o;
}

const OUTPUT = `${'{"type":"result","session_id":"s-1"}\n'.repeat(100)}`;
const conditions = (ready: "True" | "False", reason: string) => [
  {
    type: "Ready",
    status: ready,
    reason,
    message: "m",
    lastTransitionTime: iso(T0),
    observedGeneration: 1,
  },
];

describe("cachedAgent", () => {
  it("drops managedFields, annotations, labels and status.output from a run in progress, keeps the rest", () => {
    const served = asServed(
      agent("a")
        .spec({ parameters: { ticket: "T-1" }, model: "gpt-5-mini" })
        .running(T0, { conditions: conditions("True", "Running"), output: OUTPUT })
        .finalizers(BATCH_CLEANUP_FINALIZER)
        .build(),
    );
    const cached = cachedAgent(served);
    expect(cached.metadata).toEqual({
      name: "a",
      namespace: served.metadata.namespace,
      uid: "uid-a",
      resourceVersion: "100",
      generation: 1,
      creationTimestamp: iso(T0),
      finalizers: [BATCH_CLEANUP_FINALIZER],
    });
    expect(cached.spec).toEqual(served.spec);
    const { output: _o, ...status } = served.status as AgentStatus;
    expect(cached.status).toEqual(status);
    // The object from the API is left as it was.
    expect(served.status?.output).toBe(OUTPUT);
    expect(served.metadata.managedFields).toBeDefined();
  });

  it("keeps of a finished Agent only what pruning and concurrency read", () => {
    const served = asServed(
      agent("h")
        .spec({
          parameters: { ticket: "T-1" },
          files: [{ path: "a.txt", url: "https://files.example/a.txt" }],
        })
        .running(T0 - 60_000, {
          conditions: conditions("False", "Succeeded"),
          output: OUTPUT,
          sessionId: "s-1",
        })
        .completed("Succeeded", T0)
        .build(),
    );
    expect(isSettled(served)).toBe(true);
    expect(cachedAgent(served)).toEqual({
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: {
        name: "h",
        namespace: served.metadata.namespace,
        uid: "uid-h",
        resourceVersion: "100",
        generation: 1,
        creationTimestamp: iso(T0),
      },
      spec: { stationRef: "st" },
      status: {
        phase: "Succeeded",
        startedAt: iso(T0 - 60_000),
        completedAt: iso(T0),
        exitCode: 0,
        jobName: "agent-job-h",
      },
    });
  });

  it("keeps of a finished Agent what the provider limits learn from: its model, usage and providerRetries", () => {
    const usage = {
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      totalTokens: 15,
    };
    const providerRetries = {
      count: 2,
      waitedSeconds: 30,
      last: { provider: "anthropic", status: 429, at: iso(T0 - 1000), retryAfterSeconds: 20 },
    };
    const served = asServed(
      agent("h")
        .spec({ model: "claude-sonnet-4-6" })
        .running(T0 - 60_000, { output: OUTPUT, usage, providerRetries })
        .completed("Succeeded", T0)
        .build(),
    );
    const cached = cachedAgent(served);
    expect(cached.spec).toEqual({ stationRef: "st", model: "claude-sonnet-4-6" });
    expect(cached.status).toMatchObject({ usage, providerRetries });
    expect(cached.status?.output).toBeUndefined();
  });

  it("keeps a finished Agent whole (but its output) while a finalizer or a deletion still has work for it", () => {
    const withFinalizer = agent("f")
      .spec({ model: "claude-sonnet-4-6" })
      .status({ phase: "Failed", batchId: "b", batchProvider: "anthropic", failureReason: "batch timed out" })
      .finalizers(BATCH_CLEANUP_FINALIZER)
      .build();
    const deleting = agent("d").completed("Failed", T0).deleting().build();
    for (const a of [withFinalizer, deleting]) {
      expect(isSettled(a)).toBe(false);
      expect(cachedAgent(asServed(a))).toEqual({ ...a, metadata: { ...a.metadata, generation: 1 } });
    }
  });
});

/** A Job as the API server serves it: the Job the core builds, plus metadata and status. */
function servedJob(status: V1Job["status"]): V1Job {
  const a = agent("run-1").build();
  const built = buildJob(a, station().build(), definition().build(), input().settings, "interactive");
  if (!built.ok) throw new Error(built.reason);
  const job = asServed(built.job);
  job.metadata = {
    ...job.metadata,
    uid: "job-uid",
    resourceVersion: "7",
    generation: 1,
    creationTimestamp: new Date(T0),
  };
  job.status = status;
  return job;
}

const JOB_STATES: V1Job["status"][] = [
  {},
  { active: 1, ready: 0, startTime: new Date(T0) },
  { active: 1, ready: 1, startTime: new Date(T0) },
  {
    succeeded: 1,
    ready: 0,
    completionTime: new Date(T0 + 5000),
    uncountedTerminatedPods: {},
    conditions: [
      {
        type: "SuccessCriteriaMet",
        status: "True",
        reason: "CompletionsReached",
        message: "Reached expected number of succeeded pods",
        lastProbeTime: new Date(T0 + 5000),
        lastTransitionTime: new Date(T0 + 5000),
      },
      {
        type: "Complete",
        status: "True",
        reason: "CompletionsReached",
        message: "Reached expected number of succeeded pods",
        lastProbeTime: new Date(T0 + 5000),
        lastTransitionTime: new Date(T0 + 5000),
      },
    ],
  },
  {
    failed: 1,
    conditions: [
      {
        type: "FailureTarget",
        status: "True",
        reason: "DeadlineExceeded",
        message: "Job was active longer than specified deadline",
        lastTransitionTime: new Date(T0 + 9000),
      },
    ],
  },
];

describe("cachedJob", () => {
  it("keeps identity, the controlling owner and status; drops the spec and the server's metadata", () => {
    const served = servedJob(JOB_STATES[3]);
    const cached = cachedJob(served);
    expect(cached.spec).toBeUndefined();
    expect(cached.metadata).toEqual({
      name: "agent-job-run-1",
      namespace: served.metadata?.namespace,
      uid: "job-uid",
      resourceVersion: "7",
      generation: 1,
      creationTimestamp: new Date(T0),
      ownerReferences: [
        {
          apiVersion: "agents.re-cinq.com/v1beta1",
          kind: "Agent",
          name: "run-1",
          uid: "uid-run-1",
          controller: true,
        },
      ],
    });
    expect(JSON.stringify(cached).length).toBeLessThan(JSON.stringify(served).length / 5);
  });

  it("keeps the model-gateway annotation alone, so gather still knows the run is metered", () => {
    const served = servedJob(JOB_STATES[3]);
    served.metadata = {
      ...served.metadata,
      annotations: {
        "agents.re-cinq.com/model-gateway": "openai",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
      },
    };
    const cached = cachedJob(served);
    expect(cached.metadata?.annotations).toEqual({ "agents.re-cinq.com/model-gateway": "openai" });
    expect(toJobObservation(cached)).toEqual(toJobObservation(served));
    expect(toJobObservation(cached)).toMatchObject({ gatewayVendor: "openai" });
  });

  it("reads the same to gather: observation, state, finish time, ready pods", () => {
    for (const status of JOB_STATES) {
      const served = servedJob(status);
      const cached = cachedJob(served);
      expect(toJobObservation(cached)).toEqual(toJobObservation(served));
      expect(jobState(toJobObservation(cached))).toEqual(jobState(toJobObservation(served)));
      expect(jobFinishedAt(cached)).toEqual(jobFinishedAt(served));
      expect(cached.status?.ready).toEqual(served.status?.ready);
    }
  });
});

describe("cachedStation, cachedDefinition", () => {
  it("keep the specs whole, so the Job built from them is the same", () => {
    const st = asServed(
      station()
        .spec({
          maxConcurrentRuns: 2,
          template: {
            metadata: { labels: { app: "x" }, annotations: { "example.com/a": "b" } },
            spec: { containers: [{ name: "agent", image: "node:22" }] },
          },
        })
        .build(),
    );
    const def = asServed(definition().spec({ model: "claude-sonnet-4-6" }).build());
    const cs = cachedStation(st);
    const cd = cachedDefinition(def);
    expect(cs.spec).toEqual(st.spec);
    expect(cd.spec).toEqual(def.spec);
    for (const m of [cs.metadata, cd.metadata]) {
      expect(m).not.toHaveProperty("managedFields");
      expect(m).not.toHaveProperty("annotations");
    }
    const a = agent().build();
    expect(buildJob(a, cs, cd, input().settings, "interactive")).toEqual(
      buildJob(a, st, def, input().settings, "interactive"),
    );
  });
});

// --- Property: the reconcile decides the same from cached objects as from whole ones. -----------

const MIN = 60_000;
const time = fc.integer({ min: -3 * 24 * 60, max: 0 }).map((m) => T0 + m * MIN);
const phaseArb = fc.constantFrom<AgentStatus["phase"] | undefined>(
  undefined,
  "Pending",
  "Running",
  "Succeeded",
  "Failed",
);

/** An Agent as served, in any phase, with the fields a run accumulates (conditions, output, …). */
const servedAgent = (name: string) =>
  fc
    .record({
      phase: phaseArb,
      created: time,
      started: time,
      completed: time,
      finalizer: fc.boolean(),
      deleting: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
      conditions: fc.boolean(),
      batch: fc.boolean(),
      rv: fc.integer({ min: 1, max: 999 }),
    })
    .map((g) => {
      const b = agent(name)
        .created(g.created)
        .rv(String(g.rv))
        .spec({ parameters: { ticket: name }, model: "claude-sonnet-4-6" });
      if (g.phase === "Pending") b.phase("Pending");
      if (g.phase === "Running" || g.phase === "Succeeded" || g.phase === "Failed") b.running(g.started);
      if (g.phase === "Succeeded" || g.phase === "Failed") b.completed(g.phase, g.completed);
      if (g.batch) b.status({ batchId: "msgbatch_1", batchProvider: "anthropic" });
      if (g.conditions)
        b.status({ conditions: conditions(g.phase === "Running" ? "True" : "False", "Running") });
      if (g.phase === "Succeeded" || g.phase === "Failed") b.status({ output: OUTPUT, sessionId: "s-1" });
      if (g.finalizer) b.finalizers(BATCH_CLEANUP_FINALIZER);
      if (g.deleting) b.deleting();
      return asServed(b.build());
    });

const worldArb = fc
  .record({
    self: servedAgent("run-1"),
    others: fc.array(
      fc.nat(99).chain((i) => servedAgent(`other-${i}`)),
      { maxLength: 6 },
    ),
    policy: fc.constantFrom<"Allow" | "Forbid" | "Replace">("Allow", "Forbid", "Replace"),
    maxConcurrentRuns: fc.integer({ min: 0, max: 3 }),
    historyLimit: fc.integer({ min: 0, max: 3 }),
    execution: fc.constantFrom<"interactive" | "batch" | "realtime">("interactive", "batch", "realtime"),
    job: fc.constantFrom(...JOB_STATES),
    now: fc.integer({ min: 0, max: 24 * 60 }).map((m) => T0 + m * MIN),
  })
  .map((g) => {
    const others = [...new Map(g.others.map((o) => [o.metadata.name, o])).values()];
    const st: Station = asServed(
      station()
        .spec({
          concurrencyPolicy: g.policy,
          maxConcurrentRuns: g.maxConcurrentRuns,
          successfulRunsHistoryLimit: g.historyLimit,
          failedRunsHistoryLimit: g.historyLimit,
        })
        .build(),
    );
    const def: AgentDefinition = asServed(
      definition()
        .spec({
          execution: g.execution,
          resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "a" }] },
          output: { sinks: [{ type: "http", url: "https://sink" }] },
        })
        .build(),
    );
    const base = input();
    const job = servedJob(g.job);
    const whole: ReconcileInput = {
      ...base,
      agent: g.self,
      station: st,
      definition: def,
      // The cache view includes the Agent itself, as the controller's by-Station index does.
      stationAgents: [g.self, ...others],
      job: toJobObservation(job),
      pod: { found: true, agentLog: { available: true, text: '{"type":"result","session_id":"s-2"}' } },
      now: g.now,
    };
    return { whole, job };
  });

function cachedInput(whole: ReconcileInput, job: V1Job): ReconcileInput {
  const self = cachedAgent(whole.agent);
  return {
    ...whole,
    agent: self,
    station: whole.station && cachedStation(whole.station),
    definition: whole.definition && cachedDefinition(whole.definition),
    stationAgents: whole.stationAgents.map((a) => (a === whole.agent ? self : cachedAgent(a as Agent))),
    job: toJobObservation(cachedJob(job)),
  };
}

describe("cached objects drive the same decisions", () => {
  it("reconcile returns the same actions from the cached objects as from the served ones", () => {
    let history = 0;
    fc.assert(
      fc.property(worldArb, ({ whole, job }) => {
        if (whole.stationAgents.some((a) => isSettled(a))) history++;
        expect(reconcile(cachedInput(whole, job))).toEqual(reconcile(whole));
      }),
      { numRuns: 1000 },
    );
    // The generator must reach finished neighbours, the case the history transform is about.
    expect(history).toBeGreaterThan(100);
  });
});
