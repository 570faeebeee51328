/**
 * Gemini batch runs end to end: one in-process controller on the real API server, the fake
 * Gemini Batch API, the real sink dispatcher and a loopback sink listener; one Agent per row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../../src/kube/resources.js";
import { type FakeGemini, type GeminiOutcome, startFakeGemini } from "../../fakes/providers/gemini.js";
import {
  type BatchEnv,
  createAgent,
  createBatchDefinition,
  createStation,
  expectMetric,
  isLifecycle,
  metricValue,
  outputLines,
  SINK_TOKEN,
  startBatchEnv,
  waitEvent,
  waitGone,
  waitRunningBatch,
} from "./setup.js";
import { type BatchVendorRow, pollFaultsThenSuccess, runTo as runVendorTo } from "./vendor-runs.js";

let fake: FakeGemini;
let env: BatchEnv;
const MODEL = "gemini-3.1-flash-lite";
const SCHEMA = {
  type: "object",
  properties: {
    severity: { type: "string", enum: ["low", "medium", "high"] },
    component: { type: "string" },
  },
  required: ["severity", "component"],
};

beforeAll(async () => {
  fake = await startFakeGemini({ apiKey: `gemini-from-secret-${Date.now()}` });
  env = await startBatchEnv("batch-gemini", {
    baseUrls: { gemini: fake.url },
    secrets: { "gemini-key": fake.apiKey },
  });
  await createBatchDefinition(env, "triage", {
    model: MODEL,
    keyName: "GEMINI_API_KEY",
    keyRef: "gemini-key",
    schema: SCHEMA,
  });
  await createStation(env, "triage", "triage");
});

afterAll(async () => {
  await env?.close();
  await fake?.close();
});

const vendor: BatchVendorRow<GeminiOutcome> = {
  provider: "gemini",
  station: "triage",
  get fake() {
    return fake;
  },
  pollPath: (batchId) => `/v1beta/batches/${batchId}`,
  expectRunning(_running, batchId) {
    // The id is the part of batches/<id> after the slash.
    expect(batchId).not.toContain("/");
    expect(fake.batches.has(batchId)).toBe(true);
  },
  expectCleanedUp: (batchId) => expect(fake.batches.get(batchId)?.deleted).toBe(true),
};
const runTo = (name: string, outcome: GeminiOutcome) => runVendorTo(env, vendor, name, outcome);

describe("Gemini batch outcomes through the controller", () => {
  it("succeeded: gemini stream-json lines, structured output request, sinks in order", async () => {
    const before = await metricValue(env.metrics, "controller_runs_completed_total", {
      phase: "Succeeded",
      exit_code: "0",
    });
    const answer = '{"severity":"high","component":"login"}';
    const { done, batchId, uid } = await runTo("ok-1", { type: "succeeded", text: answer });
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchProvider: "gemini" });
    const lines = outputLines(done);
    expect(lines).toEqual([
      JSON.stringify({ type: "init", session_id: uid, model: MODEL }),
      JSON.stringify({ type: "message", role: "assistant", content: answer, delta: true }),
      JSON.stringify({
        type: "result",
        status: "success",
        stats: {
          total_tokens: 61,
          input_tokens: 48,
          output_tokens: 13,
          cached: 0,
          input: 48,
          duration_ms: 0,
          tool_calls: 0,
          models: {
            [MODEL]: { total_tokens: 61, input_tokens: 48, output_tokens: 13, cached: 0, input: 48 },
          },
        },
      }),
    ]);

    const submit = fake.requests.find((r) => r.method === "POST" && r.path.endsWith(":batchGenerateContent"));
    expect(submit?.path).toBe(`/v1beta/models/${MODEL}:batchGenerateContent`);
    expect(submit?.headers["x-goog-api-key"] ?? submit?.query.get("key")).toBe(fake.apiKey);
    const b = fake.batches.get(batchId);
    expect(b?.displayName).toBe(uid);
    expect(b?.requests[0]?.metadata).toMatchObject({ key: uid });
    expect(b?.requests[0]?.request).toMatchObject({
      contents: [{ parts: [{ text: "Summarise this ticket: ticket of ok-1" }] }],
      generationConfig: {
        maxOutputTokens: 16000,
        responseMimeType: "application/json",
        responseJsonSchema: SCHEMA,
      },
    });

    const events = await waitEvent(env, "ok-1", isLifecycle("succeeded"), "agent/succeeded");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      JSON.parse(lines[1] as string),
      JSON.parse(lines[2] as string),
      { kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 },
    ]);
    const received = env.listener.received.filter((r) => r.envelope.source.agent === "ok-1");
    expect(received.every((r) => r.headers.authorization === SINK_TOKEN)).toBe(true);
    await expectMetric(
      env.metrics,
      "controller_runs_completed_total",
      {
        phase: "Succeeded",
        exit_code: "0",
      },
      before + 1,
    );
  });

  it.each<{ name: string; outcome: GeminiOutcome; reason: string }>([
    {
      name: "blocked",
      outcome: { type: "blocked", blockReason: "SAFETY" },
      reason: "response blocked: SAFETY",
    },
    {
      name: "request-error",
      outcome: {
        type: "request-error",
        error: { code: 400, message: "Request contains an invalid argument." },
      },
      reason: "Request contains an invalid argument.",
    },
    {
      name: "failed",
      outcome: { type: "failed", error: { code: 13, message: "Internal error encountered." } },
      reason: "batch failed: Internal error encountered.",
    },
    { name: "cancelled", outcome: { type: "cancelled" }, reason: "batch cancelled" },
    {
      name: "expired",
      outcome: { type: "expired", error: { code: 4, message: "Batch did not finish in time." } },
      reason: "batch expired: Batch did not finish in time.",
    },
  ])("$name: Failed with `$reason`, agent/failed batch_failed", async ({ name, outcome, reason }) => {
    const agent = `${name}-1`;
    const { done, uid } = await runTo(agent, outcome);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 1, failureReason: reason });
    const lines = outputLines(done).map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ type: "init", session_id: uid, model: MODEL });
    expect(lines[1]).toMatchObject({
      type: "result",
      status: "error",
      error: { type: "BatchError", message: reason },
    });
    expect(lines).toHaveLength(2);
    const events = await waitEvent(env, agent, isLifecycle("failed"), "agent/failed");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      lines[1],
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_failed", exitCode: 1 },
    ]);
  });

  it("poll errors (500, 429, malformed body) keep the Agent Running; it completes once they clear", async () => {
    await pollFaultsThenSuccess(env, vendor, "flaky-1", {
      type: "succeeded",
      text: '{"severity":"low","component":"x"}',
    });
  });

  it("delete in flight: cancel, then DELETE right away (no waiting to settle); the Agent goes", async () => {
    await createAgent(env, "del-1", "triage");
    const running = await waitRunningBatch(env, "del-1");
    const batchId = running.status?.batchId as string;
    await env.client.delete(AGENTS, env.ns, "del-1", {});
    await waitGone(env, "del-1");
    const calls = fake.requests
      .filter((r) => r.path.startsWith(`/v1beta/batches/${batchId}`) && r.method !== "GET")
      .map((r) => `${r.method} ${r.path}`);
    expect(calls).toEqual([`POST /v1beta/batches/${batchId}:cancel`, `DELETE /v1beta/batches/${batchId}`]);
    expect(fake.batches.get(batchId)?.deleted).toBe(true);
  });
});
