/**
 * Batch lifecycle rules end to end on one vendor (Anthropic): validation, timeouts with fail and
 * fallback (and a full Station), delete of an in-flight batch, cleanup failures and the 5-attempt
 * and 48 h limits, and BATCH_ENABLED=false with a batch in flight.
 *
 * The controller's clock is moved with env.skip (timeouts, 15 s cleanup spacing, 48 h); the
 * fake's clock with fake.advance (a cancel settles after 30 virtual seconds). Tests run in order
 * and each leaves no batch in flight, since skipping time reaches every Agent of the file.
 */
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import { AGENTS, JOBS, STATIONS } from "../../../src/kube/resources.js";
import { type FakeAnthropic, startFakeAnthropic } from "../../fakes/providers/anthropic.js";
import { eventually, podScriptAnnotations } from "../../harness/context.js";
import {
  type BatchEnv,
  createAgent,
  createBatchDefinition,
  createStation,
  expectMetric,
  getAgent,
  hasFinalizer,
  isLifecycle,
  metricValue,
  startBatchEnv,
  waitAgent,
  waitEvent,
  waitGone,
  waitRunningBatch,
  waitTerminal,
} from "./setup.js";

let fake: FakeAnthropic;
let env: BatchEnv;
const MODEL = "claude-sonnet-4-6";
const KEY = { model: MODEL, keyName: "ANTHROPIC_API_KEY", keyRef: "anthropic-key" };
const HISTORY = { successfulRunsHistoryLimit: 20, failedRunsHistoryLimit: 20 };
const CLEANUP_SPACING_MS = 16_000;
const CANCEL_SETTLES_MS = 30_000;

beforeAll(async () => {
  fake = await startFakeAnthropic({ apiKey: `sk-ant-life-${Date.now()}`, cancelMs: CANCEL_SETTLES_MS });
  env = await startBatchEnv("batch-life", {
    baseUrls: { anthropic: fake.url },
    secrets: { "anthropic-key": fake.apiKey },
  });
  await createBatchDefinition(env, "plain", KEY);
  await createStation(env, "plain", "plain", HISTORY);
});

afterAll(async () => {
  await env?.close();
  await fake?.close();
});

const requestsTo = (batchId: string, method: string, suffix = "") =>
  fake.requests.filter((r) => r.method === method && r.path === `/v1/messages/batches/${batchId}${suffix}`);

const cleanupFailures = () => metricValue(env.metrics, "controller_batch_cleanup_failures_total");

/** Lets a cancelled batch settle at the fake and the next cleanup come due at the controller. */
function settleAndRetry() {
  fake.advance(CANCEL_SETTLES_MS);
  env.skip(CLEANUP_SPACING_MS);
}

describe("batch admission", () => {
  it.each([
    {
      def: { allowed_tools: ["Bash(npm test)"] },
      spec: {},
      reason: "batch execution does not support allowed_tools",
    },
    { def: { max_turns: 3 }, spec: {}, reason: "batch execution does not support max_turns" },
    {
      def: {},
      spec: { files: [{ path: "a.txt", url: "https://example.test/a.txt" }] },
      reason: "batch execution does not support files",
    },
  ])("fails with `$reason`, submitting nothing", async ({ def, spec, reason }) => {
    const name = `inv-${reason.split(" ").at(-1)?.replace(/_/g, "-")}`;
    if (Object.keys(def).length > 0) {
      await createBatchDefinition(env, name, { ...KEY, extra: def });
      await createStation(env, name, name, HISTORY);
    }
    const submitsBefore = fake.requests.filter((r) => r.method === "POST").length;
    await createAgent(env, name, Object.keys(def).length > 0 ? name : "plain", spec);
    const done = await waitTerminal(env, name);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 1, failureReason: reason });
    expect(done.status?.batchId ?? "").toBe("");
    expect(hasFinalizer(done)).toBe(false);
    expect(fake.requests.filter((r) => r.method === "POST").length).toBe(submitsBefore);
  });
});

describe("batch timeouts", () => {
  it("onTimeout fail: cancel, Failed `batch timed out`, agent/failed batch_timeout, then cleanup", async () => {
    await createBatchDefinition(env, "t-fail", { ...KEY, batch: { timeoutMinutes: 5, onTimeout: "fail" } });
    await createStation(env, "t-fail", "t-fail", HISTORY);
    await createAgent(env, "tf-1", "t-fail");
    const running = await waitRunningBatch(env, "tf-1");
    const batchId = running.status?.batchId as string;
    const failuresBefore = await metricValue(env.metrics, "controller_run_failures_total", {
      kind: "batch_timeout",
    });
    // Not yet: 4 minutes in, the batch is still polled and the Agent Running.
    env.skip(4 * 60_000);
    const polls = requestsTo(batchId, "GET").length;
    await eventually("a poll after 4 minutes", () => requestsTo(batchId, "GET").length > polls || undefined);
    expect((await getAgent(env, "tf-1"))?.status?.phase).toBe("Running");

    env.skip(2 * 60_000);
    const done = await waitTerminal(env, "tf-1");
    expect(done.status).toMatchObject({
      phase: "Failed",
      exitCode: 1,
      failureReason: "batch timed out",
      batchId,
      batchProvider: "anthropic",
    });
    expect(done.status?.batchFallback ?? false).toBe(false);
    expect(requestsTo(batchId, "POST", "/cancel").length).toBeGreaterThanOrEqual(1);
    const events = await waitEvent(env, "tf-1", isLifecycle("failed"), "agent/failed");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_timeout", exitCode: 1 },
    ]);
    await expectMetric(
      env.metrics,
      "controller_run_failures_total",
      { kind: "batch_timeout" },
      failuresBefore + 1,
    );

    // The cancelled batch is canceling: cleanup is not settled (not a failure) until it ends.
    const cleanupBefore = await cleanupFailures();
    const uid = running.metadata.uid as string;
    await eventually(
      "a cleanup attempt on the canceling batch",
      () => env.controller.memory.peekBatch(uid)?.lastCleanupAt !== undefined || undefined,
    );
    const waiting = await getAgent(env, "tf-1");
    expect(waiting && hasFinalizer(waiting)).toBe(true);
    expect(fake.batches.get(batchId)?.status).toBe("canceling");
    settleAndRetry();
    const released = await waitAgent(env, "tf-1", "finalizer released", (a) => !hasFinalizer(a));
    expect(fake.batches.get(batchId)?.deleted).toBe(true);
    expect(released.status?.phase).toBe("Failed");
    expect(released.status?.batchCleanupAttempts ?? 0).toBe(0);
    await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, cleanupBefore);
  });

  it("onTimeout fallback: batchFallback true, batchId kept, a Job created; the Job's result completes the Agent", async () => {
    await createBatchDefinition(env, "t-fb", { ...KEY, batch: { timeoutMinutes: 5, onTimeout: "fallback" } });
    await createStation(
      env,
      "t-fb",
      "t-fb",
      HISTORY,
      podScriptAnnotations({ exitCode: 0, runTime: "1s", logs: { agent: "fallback answer" } }),
    );
    await createAgent(env, "fb-1", "t-fb");
    const running = await waitRunningBatch(env, "fb-1");
    const batchId = running.status?.batchId as string;
    env.skip(6 * 60_000);
    const fellBack = await waitAgent(env, "fb-1", "fallback Job", (a) => !!a.status?.jobName);
    expect(fellBack.status).toMatchObject({
      phase: "Running",
      batchFallback: true,
      batchId,
      batchProvider: "anthropic",
      jobName: jobNameFor("fb-1"),
    });
    const job = await env.client.get<V1Job>(JOBS, env.ns, jobNameFor("fb-1"));
    expect(job?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "Agent",
      name: "fb-1",
      controller: true,
    });
    expect(requestsTo(batchId, "POST", "/cancel").length).toBeGreaterThanOrEqual(1);
    const events = await waitEvent(env, "fb-1", isLifecycle("running", "batch_timeout"), "agent/running");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      { kind: "lifecycle", phase: "agent", status: "running", reason: "batch_timeout" },
    ]);
    // The batch is cleaned up once it settles; the run goes on as a Job.
    settleAndRetry();
    await waitAgent(env, "fb-1", "finalizer released", (a) => !hasFinalizer(a));
    expect(fake.batches.get(batchId)?.deleted).toBe(true);
    const done = await waitTerminal(env, "fb-1");
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchFallback: true, batchId });
    expect(done.status?.output).toContain("fallback answer");
  });

  it("a result that is there when the timeout passes wins: no fallback starts", async () => {
    await createAgent(env, "race-1", "t-fb");
    const running = await waitRunningBatch(env, "race-1");
    const batchId = running.status?.batchId as string;
    fake.setOutcome(batchId, { type: "succeeded", text: "just in time" });
    // In one tick: the batch ends at the provider and the timeout passes at the controller.
    fake.finish(batchId);
    env.skip(6 * 60_000);
    const done = await waitTerminal(env, "race-1");
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchId });
    expect(done.status?.batchFallback ?? false).toBe(false);
    expect(done.status?.jobName ?? "").toBe("");
    expect(await env.client.get<V1Job>(JOBS, env.ns, jobNameFor("race-1"))).toBeUndefined();
    expect(requestsTo(batchId, "POST", "/cancel")).toHaveLength(0);
    await waitAgent(env, "race-1", "finalizer released", (a) => !hasFinalizer(a));
  });

  it("onTimeout fallback at a full Station: Running with batchFallback and no Job until a slot frees", async () => {
    await createBatchDefinition(env, "t-full", {
      ...KEY,
      batch: { timeoutMinutes: 5, onTimeout: "fallback" },
    });
    await createStation(
      env,
      "t-full",
      "t-full",
      { ...HISTORY, maxConcurrentRuns: 0 },
      podScriptAnnotations({ exitCode: 0, runTime: "1s", logs: { agent: "late fallback" } }),
    );
    await createAgent(env, "full-a", "t-full");
    await createAgent(env, "full-b", "t-full");
    const a = await waitRunningBatch(env, "full-a");
    await waitRunningBatch(env, "full-b");
    // Now only one run fits: each of the two sees the other Running.
    expect(
      await env.client.jsonPatch(STATIONS, env.ns, "t-full", [
        { op: "replace", path: "/spec/maxConcurrentRuns", value: 1 },
      ]),
    ).toBe("ok");
    await eventually("the controller sees the new limit", () =>
      env.controller.stations.cache.get("t-full")?.spec.maxConcurrentRuns === 1 ? true : undefined,
    );
    env.skip(6 * 60_000);
    for (const name of ["full-a", "full-b"]) {
      const w = await waitAgent(env, name, "batchFallback", (x) => x.status?.batchFallback === true);
      expect(w.status).toMatchObject({ phase: "Running", batchFallback: true });
      expect(w.status?.batchId).toBeTruthy();
    }
    // Several reconciles later there is still no Job.
    const reconciles = env.controller.reconciles;
    await eventually("more reconciles", () => env.controller.reconciles > reconciles + 6 || undefined);
    for (const name of ["full-a", "full-b"]) {
      expect((await getAgent(env, name))?.status?.jobName ?? "").toBe("");
      expect(await env.client.get<V1Job>(JOBS, env.ns, jobNameFor(name))).toBeUndefined();
    }
    // Deleting b frees the slot (its batch cleanup runs first): a's fallback Job starts.
    await env.client.delete(AGENTS, env.ns, "full-b", {});
    settleAndRetry();
    await waitGone(env, "full-b");
    const started = await waitAgent(env, "full-a", "fallback Job", (x) => !!x.status?.jobName);
    expect(started.status).toMatchObject({ batchFallback: true, batchId: a.status?.batchId });
    const done = await waitTerminal(env, "full-a");
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
  });
});

describe("delete and cleanup", () => {
  it("delete in flight: cancel, not settled while canceling (no failure counted), then deleted and the Agent is gone", async () => {
    await createAgent(env, "del-1", "plain");
    const running = await waitRunningBatch(env, "del-1");
    const batchId = running.status?.batchId as string;
    const failuresBefore = await cleanupFailures();
    await env.client.delete(AGENTS, env.ns, "del-1", {});
    await eventually(
      "cancel requested",
      () => requestsTo(batchId, "POST", "/cancel").length > 0 || undefined,
    );
    await eventually("a cleanup attempt", () => requestsTo(batchId, "GET").length > 0 || undefined);
    // Canceling: the Agent stays (deleting, finalizer kept); the unsettled cleanup is no failure.
    const stuck = await waitAgent(
      env,
      "del-1",
      "deleting with finalizer",
      (x) => !!x.metadata.deletionTimestamp,
    );
    expect(hasFinalizer(stuck)).toBe(true);
    expect(fake.batches.get(batchId)?.status).toBe("canceling");
    const gets = requestsTo(batchId, "GET").length;
    env.skip(CLEANUP_SPACING_MS);
    await eventually("another cleanup attempt", () => requestsTo(batchId, "GET").length > gets || undefined);
    expect((await getAgent(env, "del-1"))?.status?.batchCleanupAttempts ?? 0).toBe(0);
    settleAndRetry();
    await waitGone(env, "del-1");
    expect(fake.batches.get(batchId)?.deleted).toBe(true);
    await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, failuresBefore);
  });

  it("Replace: a new batch Agent at a full Station deletes the oldest Running run (its batch cancelled and cleaned up) and submits", async () => {
    await createStation(env, "repl", "plain", { ...HISTORY, concurrencyPolicy: "Replace" });
    await createAgent(env, "rep-1", "repl");
    const first = await waitRunningBatch(env, "rep-1");
    const oldBatch = first.status?.batchId as string;
    await createAgent(env, "rep-2", "repl");
    const second = await waitRunningBatch(env, "rep-2");
    expect(second.status?.batchId).not.toBe(oldBatch);
    await eventually(
      "the old batch cancelled",
      () => requestsTo(oldBatch, "POST", "/cancel").length > 0 || undefined,
    );
    settleAndRetry();
    await waitGone(env, "rep-1");
    expect(fake.batches.get(oldBatch)?.deleted).toBe(true);
    fake.finish(second.status?.batchId as string);
    expect((await waitTerminal(env, "rep-2")).status?.phase).toBe("Succeeded");
  });

  it("cleanup failures are counted; after 5 the finalizer is removed anyway and the phase never changes", async () => {
    await createAgent(env, "cf-1", "plain");
    const running = await waitRunningBatch(env, "cf-1");
    const batchId = running.status?.batchId as string;
    const failuresBefore = await cleanupFailures();
    fake.inject({
      kind: "status",
      status: 500,
      method: "DELETE",
      path: `/v1/messages/batches/${batchId}`,
      times: Number.POSITIVE_INFINITY,
    });
    fake.finish(batchId);
    await waitTerminal(env, "cf-1");
    for (let n = 1; n <= 5; n++) {
      const a = await waitAgent(
        env,
        "cf-1",
        `batchCleanupAttempts ${n}`,
        (x) => x.status?.batchCleanupAttempts === n,
      );
      expect(a.status?.phase).toBe("Succeeded");
      await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, failuresBefore + n);
      if (n < 5) {
        expect(hasFinalizer(a)).toBe(true);
        env.skip(CLEANUP_SPACING_MS);
      }
    }
    const released = await waitAgent(env, "cf-1", "finalizer removed", (x) => !hasFinalizer(x));
    expect(released.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchCleanupAttempts: 5 });
    expect(requestsTo(batchId, "DELETE")).toHaveLength(5);
    // The provider object is left behind.
    expect(fake.batches.get(batchId)?.deleted).toBe(false);
    fake.clearFaults();
  });
});

describe("the request and the result", () => {
  it("spec.model overrides the definition's model; no model at all uses claude-opus-5-5", async () => {
    await createAgent(env, "model-1", "plain", { model: "claude-haiku-5-5" });
    await createBatchDefinition(env, "no-model", { ...KEY, model: "" });
    await createStation(env, "no-model", "no-model", HISTORY);
    await createAgent(env, "model-2", "no-model");
    for (const [name, model] of [
      ["model-1", "claude-haiku-5-5"],
      ["model-2", "claude-opus-5-5"],
    ] as const) {
      const running = await waitRunningBatch(env, name);
      const batchId = running.status?.batchId as string;
      expect(fake.batches.get(batchId)?.requests[0]?.params.model).toBe(model);
      fake.finish(batchId);
      const done = await waitTerminal(env, name);
      expect(done.status?.phase).toBe("Succeeded");
      expect(JSON.parse(done.status?.output?.split("\n")[0] as string)).toMatchObject({ model });
    }
  });

  it("status.output is capped at MAX_OUTPUT_BYTES while the sinks get every line whole", async () => {
    await env.restart({ MAX_OUTPUT_BYTES: "1500" });
    try {
      const answer = "x".repeat(4000);
      await createAgent(env, "big-1", "plain");
      const running = await waitRunningBatch(env, "big-1");
      const batchId = running.status?.batchId as string;
      fake.setOutcome(batchId, { type: "succeeded", text: answer });
      fake.finish(batchId);
      const done = await waitTerminal(env, "big-1");
      expect(done.status?.phase).toBe("Succeeded");
      const output = done.status?.output ?? "";
      expect(output.startsWith("...[truncated ")).toBe(true);
      expect(Buffer.byteLength(output)).toBeLessThan(1600);
      const events = await waitEvent(env, "big-1", isLifecycle("succeeded"), "agent/succeeded");
      expect(events.map((e) => e.type ?? e.status)).toEqual(["started", "assistant", "result", "succeeded"]);
      expect(events[2]).toMatchObject({ type: "result", result: answer });
    } finally {
      await env.restart();
    }
  });
});

describe("BATCH_ENABLED=false", () => {
  it("with a batch in flight: Failed `batch execution is disabled on this controller`, agent/failed, finalizer released without provider calls", async () => {
    await createAgent(env, "dis-1", "plain");
    const running = await waitRunningBatch(env, "dis-1");
    const batchId = running.status?.batchId as string;
    const failedBefore = await metricValue(env.metrics, "controller_runs_completed_total", {
      phase: "Failed",
      exit_code: "1",
    });
    await env.restart({ BATCH_ENABLED: "false" });
    try {
      const seen = fake.requests.length;
      const done = await waitTerminal(env, "dis-1");
      expect(done.status).toMatchObject({
        phase: "Failed",
        exitCode: 1,
        failureReason: "batch execution is disabled on this controller",
        batchId,
      });
      await waitAgent(env, "dis-1", "finalizer released", (x) => !hasFinalizer(x));
      const events = await waitEvent(env, "dis-1", isLifecycle("failed"), "agent/failed");
      expect(events).toEqual([
        { kind: "lifecycle", phase: "agent", status: "started" },
        { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_disabled", exitCode: 1 },
      ]);
      await expectMetric(
        env.metrics,
        "controller_runs_completed_total",
        { phase: "Failed", exit_code: "1" },
        failedBefore + 1,
      );

      // A new batch Agent on the disabled controller fails at once.
      await createAgent(env, "dis-2", "plain");
      const refused = await waitTerminal(env, "dis-2");
      expect(refused.status).toMatchObject({
        phase: "Failed",
        failureReason: "batch execution is disabled on this controller",
      });
      // No provider call since batch was turned off: the batch is left to run out on its own.
      expect(fake.requests.slice(seen)).toEqual([]);
      expect(fake.batches.get(batchId)?.deleted).toBe(false);
    } finally {
      // Later tests need batch back on.
      await env.restart();
    }
  });
});

describe("the 48 h rule", () => {
  it("a batch still unsettled 48 h after startedAt counts its cleanups as failures; after 5 the Agent goes", async () => {
    await createAgent(env, "stuck-1", "plain");
    const running = await waitRunningBatch(env, "stuck-1");
    const batchId = running.status?.batchId as string;
    const failuresBefore = await cleanupFailures();
    // The cancel never settles at the fake: its clock is not advanced.
    await env.client.delete(AGENTS, env.ns, "stuck-1", {});
    await eventually(
      "cancel requested",
      () => requestsTo(batchId, "POST", "/cancel").length > 0 || undefined,
    );
    env.skip(49 * 3600_000);
    for (let n = 1; n <= 5; n++) {
      if (n < 5) {
        const a = await waitAgent(
          env,
          "stuck-1",
          `batchCleanupAttempts ${n}`,
          (x) => x.status?.batchCleanupAttempts === n,
        );
        expect(hasFinalizer(a)).toBe(true);
        await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, failuresBefore + n);
      }
      env.skip(CLEANUP_SPACING_MS);
    }
    await waitGone(env, "stuck-1");
    await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, failuresBefore + 5);
    expect(fake.batches.get(batchId)?.deleted).toBe(false);
  });
});
