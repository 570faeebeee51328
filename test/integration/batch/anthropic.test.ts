/**
 * Anthropic batch runs end to end: one in-process controller on the real API server, the fake
 * Message Batches API, the real sink dispatcher and a loopback sink listener; one Agent per row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AnthropicOutcome,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../../fakes/providers/anthropic.js";
import {
  type BatchEnv,
  createBatchDefinition,
  createStation,
  expectMetric,
  isLifecycle,
  metricValue,
  outputLines,
  SINK_TOKEN,
  startBatchEnv,
  waitEvent,
} from "./setup.js";
import { type BatchVendorRow, pollFaultsThenSuccess, runTo as runVendorTo } from "./vendor-runs.js";

let fake: FakeAnthropic;
let env: BatchEnv;
const MODEL = "claude-sonnet-4-6";

beforeAll(async () => {
  // A key nobody could guess: the submit works only if it came from agent-secrets.
  fake = await startFakeAnthropic({ apiKey: `sk-ant-from-secret-${Date.now()}` });
  env = await startBatchEnv("batch-anthropic", {
    baseUrls: { anthropic: fake.url },
    secrets: { "anthropic-key": fake.apiKey },
  });
  await createBatchDefinition(env, "summary", {
    model: MODEL,
    keyName: "ANTHROPIC_API_KEY",
    keyRef: "anthropic-key",
  });
  await createStation(env, "summary", "summary");
});

afterAll(async () => {
  await env?.close();
  await fake?.close();
});

const vendor: BatchVendorRow<AnthropicOutcome> = {
  provider: "anthropic",
  station: "summary",
  get fake() {
    return fake;
  },
  pollPath: (batchId) => `/v1/messages/batches/${batchId}`,
  expectRunning(running, batchId) {
    expect(batchId).toMatch(/^msgbatch_/);
    expect(running.status?.jobName ?? "").toBe("");
  },
  // The cleanup deletes the batch, then releases the finalizer.
  expectCleanedUp: (batchId) => expect(fake.batches.get(batchId)?.deleted).toBe(true),
};
const runTo = (name: string, outcome: AnthropicOutcome) => runVendorTo(env, vendor, name, outcome);

describe("Anthropic batch outcomes through the controller", () => {
  it("succeeded: Succeeded, CLI lines in status.output, sinks get started, lines through select, succeeded", async () => {
    const before = await metricValue(env.metrics, "controller_runs_completed_total", {
      phase: "Succeeded",
      exit_code: "0",
    });
    const { done, batchId, uid } = await runTo("ok-1", {
      type: "succeeded",
      text: "Login fails for SSO users since 2.3.",
    });
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchProvider: "anthropic" });
    expect(done.status?.failureReason ?? "").toBe("");
    const lines = outputLines(done).map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual(["system", "assistant", "result"]);
    expect(lines[0]).toMatchObject({ subtype: "init", session_id: uid, model: MODEL });
    // The thinking block is dropped; only the text block remains.
    expect(lines[1].message.content).toEqual([
      { type: "text", text: "Login fails for SSO users since 2.3." },
    ]);
    expect(lines[2]).toMatchObject({
      type: "result",
      is_error: false,
      result: "Login fails for SSO users since 2.3.",
      session_id: uid,
      duration_ms: 0,
    });
    expect(lines[2].usage).toMatchObject({ input_tokens: 48, output_tokens: 75 });
    expect(typeof lines[2].total_cost_usd).toBe("number");

    // The request: one per Agent, custom_id = uid, rendered prompt, default max_tokens, key from the Secret.
    const submit = fake.requests.find((r) => r.method === "POST" && r.path === "/v1/messages/batches");
    expect(submit?.headers["x-api-key"]).toBe(fake.apiKey);
    const req = fake.batches.get(batchId)?.requests[0];
    expect(req?.custom_id).toBe(uid);
    expect(req?.params).toMatchObject({
      model: MODEL,
      max_tokens: 16000,
      messages: [{ role: "user", content: "Summarise this ticket: ticket of ok-1" }],
    });

    const events = await waitEvent(env, "ok-1", isLifecycle("succeeded"), "agent/succeeded");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      lines[1],
      lines[2],
      { kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 },
    ]);
    const received = env.listener.received.filter((r) => r.envelope.source.agent === "ok-1");
    expect(received[0]?.envelope.source).toEqual({ agent: "ok-1", station: "summary", namespace: env.ns });
    // headers_secret is read from agent-secrets by the controller.
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

  it.each<{ name: string; outcome: AnthropicOutcome; reason: string }>([
    {
      name: "errored",
      outcome: {
        type: "errored",
        error: { type: "invalid_request_error", message: "max_tokens: too large" },
      },
      reason: "invalid_request_error: max_tokens: too large",
    },
    { name: "expired", outcome: { type: "expired" }, reason: "batch request expired" },
    { name: "canceled", outcome: { type: "canceled" }, reason: "batch request canceled" },
  ])("$name: Failed with `$reason`, agent/failed batch_failed", async ({ name, outcome, reason }) => {
    const before = await metricValue(env.metrics, "controller_runs_completed_total", {
      phase: "Failed",
      exit_code: "1",
    });
    const agent = `${name}-1`;
    const { done } = await runTo(agent, outcome);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 1, failureReason: reason });
    const lines = outputLines(done).map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual(["system", "result"]);
    expect(lines[1]).toMatchObject({ is_error: true, result: reason });
    const events = await waitEvent(env, agent, isLifecycle("failed"), "agent/failed");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      lines[1],
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_failed", exitCode: 1 },
    ]);
    await expectMetric(
      env.metrics,
      "controller_runs_completed_total",
      { phase: "Failed", exit_code: "1" },
      before + 1,
    );
  });

  it("poll errors (500, 429, malformed body) keep the Agent Running; it completes once they clear", async () => {
    const done = await pollFaultsThenSuccess(env, vendor, "flaky-1", {
      type: "succeeded",
      text: "after the storm",
    });
    expect(JSON.parse(outputLines(done).at(-1) as string)).toMatchObject({ result: "after the storm" });
  });
});
