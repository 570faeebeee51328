/**
 * The batch lifecycle rules of lifecycle.test.ts (timeouts with fail and fallback, cleanup
 * failures) for Gemini and OpenAI, whose cleanups differ: Gemini sends the DELETE right after
 * the cancel without waiting for the batch to settle; OpenAI waits until the batch is cancelled
 * and then deletes its input, output and error files (it cannot delete batch objects).
 *
 * One controller and one fake per vendor. The controller's clock moves with env.skip (timeouts,
 * 15 s cleanup spacing), the fake's with fake.advance. Tests run in order and each leaves no
 * batch in flight, since skipping time reaches every Agent of the vendor's namespace.
 */
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BatchProviderName } from "../../../src/batch/provider.js";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import { JOBS } from "../../../src/kube/resources.js";
import type { FaultRule, RecordedRequest } from "../../fakes/providers/base.js";
import { type FakeGemini, startFakeGemini } from "../../fakes/providers/gemini.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../fakes/providers/openai.js";
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
  waitRunningBatch,
  waitTerminal,
} from "./setup.js";

const HISTORY = { successfulRunsHistoryLimit: 20, failedRunsHistoryLimit: 20 };
const CLEANUP_SPACING_MS = 16_000;
const TIMEOUT = { timeoutMinutes: 5 };
const PAST_TIMEOUT_MS = 6 * 60_000;

/** What the tests need from a vendor's fake, whatever its API looks like. */
interface Vendor {
  provider: BatchProviderName;
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  inject(rule: FaultRule): void;
  clearFaults(): void;
  finish(batchId: string): void;
  close(): Promise<void>;
  cancelPath(batchId: string): string;
  /** The DELETE requests the controller sent to clean up this batch. */
  cleanupDeletes(batchId: string): RecordedRequest[];
  /** Every provider object of the batch that cleanup removes is gone. */
  cleanedUp(batchId: string): boolean;
  /** Makes every cleanup DELETE of this (settled) batch answer a 5xx. */
  failCleanup(batchId: string): void;
  /** The cleanup attempts one cleanup sends (Gemini: the batch; OpenAI: each of its files). */
  deletesPerAttempt(batchId: string): number;
  /**
   * After a timeout cancel: checks cleanup runs the vendor's way, moving the fake's clock if the
   * vendor needs the batch settled first; resolves once the finalizer is gone.
   */
  expectCleanupAfterCancel(env: BatchEnv, agent: string, batchId: string): Promise<void>;
}

const deletesOf = (requests: RecordedRequest[], path: (p: string) => boolean) =>
  requests.filter((r) => r.method === "DELETE" && path(r.path));

function geminiVendor(fake: FakeGemini): Vendor {
  const batchPath = (id: string) => `/v1beta/batches/${id}`;
  return {
    provider: "gemini",
    url: fake.url,
    apiKey: fake.apiKey,
    requests: fake.requests,
    inject: fake.inject,
    clearFaults: fake.clearFaults,
    finish: fake.finish,
    close: fake.close,
    cancelPath: (id) => `${batchPath(id)}:cancel`,
    cleanupDeletes: (id) => deletesOf(fake.requests, (p) => p === batchPath(id)),
    cleanedUp: (id) => fake.batches.get(id)?.deleted === true,
    failCleanup: (id) =>
      fake.inject({
        kind: "status",
        status: 503,
        method: "DELETE",
        path: batchPath(id),
        times: Number.POSITIVE_INFINITY,
      }),
    deletesPerAttempt: () => 1,
    async expectCleanupAfterCancel(env, agent, batchId) {
      // The fake's clock never moves here: the cancelled batch has not settled, yet it is deleted.
      await waitAgent(env, agent, "finalizer released", (a) => !hasFinalizer(a));
      const b = fake.batches.get(batchId);
      expect(b?.deleted).toBe(true);
      expect(b?.state === "PENDING" || b?.state === "RUNNING", `state ${b?.state}`).toBe(true);
      const calls = fake.requests
        .filter((r) => r.path.startsWith(batchPath(batchId)) && r.method !== "GET")
        .map((r) => `${r.method} ${r.path}`);
      expect(calls).toEqual([`POST ${batchPath(batchId)}:cancel`, `DELETE ${batchPath(batchId)}`]);
    },
  };
}

function openaiVendor(fake: FakeOpenAI): Vendor {
  const fileIds = (id: string) => {
    const b = fake.batches.get(id);
    return [b?.inputFileId, b?.outputFileId, b?.errorFileId].filter((x): x is string => !!x);
  };
  const filePath = (f: string) => `/v1/files/${f}`;
  const isFileOf = (id: string) => (p: string) => fileIds(id).some((f) => p === filePath(f));
  return {
    provider: "openai",
    url: fake.url,
    apiKey: fake.apiKey,
    requests: fake.requests,
    inject: fake.inject,
    clearFaults: fake.clearFaults,
    finish: fake.finish,
    close: fake.close,
    cancelPath: (id) => `/v1/batches/${id}/cancel`,
    cleanupDeletes: (id) => deletesOf(fake.requests, isFileOf(id)),
    cleanedUp: (id) => fileIds(id).every((f) => fake.files.get(f)?.deleted === true),
    failCleanup: (id) => {
      const ids = fileIds(id);
      expect(ids.length).toBeGreaterThanOrEqual(2);
      fake.inject({
        kind: "status",
        status: 500,
        method: "DELETE",
        path: new RegExp(`^/v1/files/(${ids.join("|")})$`),
        times: Number.POSITIVE_INFINITY,
      });
    },
    deletesPerAttempt: (id) => fileIds(id).length,
    async expectCleanupAfterCancel(env, agent, batchId) {
      const uid = (await getAgent(env, agent))?.metadata.uid as string;
      // Cancelling: cleanup is tried, deletes nothing, keeps the finalizer and counts no failure.
      await eventually(
        "a cleanup attempt on the cancelling batch",
        () => env.controller.memory.peekBatch(uid)?.lastCleanupAt !== undefined || undefined,
      );
      expect(fake.batches.get(batchId)?.status).toBe("cancelling");
      const waiting = await getAgent(env, agent);
      expect(waiting && hasFinalizer(waiting)).toBe(true);
      expect(waiting?.status?.batchCleanupAttempts ?? 0).toBe(0);
      expect(deletesOf(fake.requests, isFileOf(batchId))).toEqual([]);
      // The batch settles (cancelled, its error file written); the next cleanup deletes every file.
      fake.advance(10 * 60_000);
      env.skip(CLEANUP_SPACING_MS);
      await waitAgent(env, agent, "finalizer released", (a) => !hasFinalizer(a));
      const b = fake.batches.get(batchId);
      expect(b?.status).toBe("cancelled");
      const ids = fileIds(batchId);
      expect(ids.length).toBeGreaterThanOrEqual(2);
      for (const f of ids) expect(fake.files.get(f)?.deleted, `file ${f} deleted`).toBe(true);
    },
  };
}

const VENDORS = [
  {
    name: "gemini",
    model: "gemini-3.1-flash-lite",
    keyName: "GEMINI_API_KEY",
    keyRef: "gemini-key",
    // A cancel that takes a while to settle shows Gemini's cleanup does not wait for it.
    start: async () =>
      geminiVendor(await startFakeGemini({ apiKey: `gem-life-${Date.now()}`, cancelMs: 30_000 })),
  },
  {
    name: "openai",
    model: "gpt-5-mini",
    keyName: "OPENAI_API_KEY",
    keyRef: "openai-key",
    start: async () => openaiVendor(await startFakeOpenAI({ apiKey: `sk-oai-life-${Date.now()}` })),
  },
] as const;

describe.each(VENDORS)("$name batch lifecycle", ({ name, model, keyName, keyRef, start }) => {
  let fake: Vendor;
  let env: BatchEnv;
  const KEY = { model, keyName, keyRef };

  beforeAll(async () => {
    fake = await start();
    env = await startBatchEnv(`vlife-${name}`, {
      baseUrls: { [fake.provider]: fake.url },
      secrets: { [keyRef]: fake.apiKey },
    });
    await createBatchDefinition(env, "plain", KEY);
    await createStation(env, "plain", "plain", HISTORY);
    await createBatchDefinition(env, "t-fail", { ...KEY, batch: { ...TIMEOUT, onTimeout: "fail" } });
    await createStation(env, "t-fail", "t-fail", HISTORY);
    await createBatchDefinition(env, "t-fb", { ...KEY, batch: { ...TIMEOUT, onTimeout: "fallback" } });
    await createStation(
      env,
      "t-fb",
      "t-fb",
      HISTORY,
      podScriptAnnotations({ exitCode: 0, runTime: "1s", logs: { agent: "fallback answer" } }),
    );
  });

  afterAll(async () => {
    await env?.close();
    await fake?.close();
  });

  const cancels = (batchId: string) =>
    fake.requests.filter((r) => r.method === "POST" && r.path === fake.cancelPath(batchId));

  it("onTimeout fail: cancel, Failed `batch timed out`, agent/failed batch_timeout, then the vendor's cleanup", async () => {
    await createAgent(env, "tf-1", "t-fail");
    const running = await waitRunningBatch(env, "tf-1");
    const batchId = running.status?.batchId as string;
    expect(running.status?.batchProvider).toBe(name);
    const timeoutsBefore = await metricValue(env.metrics, "controller_run_failures_total", {
      kind: "batch_timeout",
    });
    const cleanupBefore = await metricValue(env.metrics, "controller_batch_cleanup_failures_total");
    env.skip(PAST_TIMEOUT_MS);
    const done = await waitTerminal(env, "tf-1");
    expect(done.status).toMatchObject({
      phase: "Failed",
      exitCode: 1,
      failureReason: "batch timed out",
      batchId,
      batchProvider: name,
    });
    expect(done.status?.batchFallback ?? false).toBe(false);
    await eventually("the cancel reached the fake", () => cancels(batchId).length > 0 || undefined);
    const events = await waitEvent(env, "tf-1", isLifecycle("failed"), "agent/failed");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_timeout", exitCode: 1 },
    ]);
    await expectMetric(
      env.metrics,
      "controller_run_failures_total",
      { kind: "batch_timeout" },
      timeoutsBefore + 1,
    );

    await fake.expectCleanupAfterCancel(env, "tf-1", batchId);
    const released = await getAgent(env, "tf-1");
    expect(released?.status).toMatchObject({ phase: "Failed", failureReason: "batch timed out" });
    expect(released?.status?.batchCleanupAttempts ?? 0).toBe(0);
    await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, cleanupBefore);
  });

  it("onTimeout fallback: batchFallback true, batchId kept, an owned Job, agent/running batch_timeout", async () => {
    await createAgent(env, "fb-1", "t-fb");
    const running = await waitRunningBatch(env, "fb-1");
    const batchId = running.status?.batchId as string;
    env.skip(PAST_TIMEOUT_MS);
    const fellBack = await waitAgent(env, "fb-1", "fallback Job", (a) => !!a.status?.jobName);
    expect(fellBack.status).toMatchObject({
      phase: "Running",
      batchFallback: true,
      batchId,
      batchProvider: name,
      jobName: jobNameFor("fb-1"),
    });
    const job = await env.client.get<V1Job>(JOBS, env.ns, jobNameFor("fb-1"));
    expect(job?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "Agent",
      name: "fb-1",
      uid: running.metadata.uid,
      controller: true,
    });
    await eventually("the cancel reached the fake", () => cancels(batchId).length > 0 || undefined);
    const events = await waitEvent(env, "fb-1", isLifecycle("running", "batch_timeout"), "agent/running");
    expect(events.slice(0, 2)).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      { kind: "lifecycle", phase: "agent", status: "running", reason: "batch_timeout" },
    ]);
    // The cancelled batch is cleaned up the vendor's way while the run goes on as a Job.
    await fake.expectCleanupAfterCancel(env, "fb-1", batchId);
    const done = await waitTerminal(env, "fb-1");
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchFallback: true, batchId });
  });

  it("cleanup failures (5xx DELETEs) are counted 1..5; after 5 the finalizer goes anyway, phase unchanged", async () => {
    await createAgent(env, "cf-1", "plain");
    const running = await waitRunningBatch(env, "cf-1");
    const batchId = running.status?.batchId as string;
    const failuresBefore = await metricValue(env.metrics, "controller_batch_cleanup_failures_total");
    // Same tick as finish: the controller cannot poll, let alone clean up, before the faults are in.
    fake.finish(batchId);
    fake.failCleanup(batchId);
    try {
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
      // Every attempt tried every object; none was removed, and they are left behind.
      expect(fake.cleanupDeletes(batchId)).toHaveLength(5 * fake.deletesPerAttempt(batchId));
      expect(fake.cleanedUp(batchId)).toBe(false);
    } finally {
      fake.clearFaults();
    }
  });
});
