/**
 * OpenAI batch runs end to end: one in-process controller on the real API server, the fake
 * OpenAI Files + Batch API, the real sink dispatcher and a loopback sink listener; one Agent per row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../../src/kube/resources.js";
import { type FakeOpenAI, type OpenAIOutcome, startFakeOpenAI } from "../../fakes/providers/openai.js";
import { eventually } from "../../harness/context.js";
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
  outputLines,
  SINK_TOKEN,
  startBatchEnv,
  waitEvent,
  waitGone,
  waitRunningBatch,
} from "./setup.js";
import { type BatchVendorRow, pollFaultsThenSuccess, runTo as runVendorTo } from "./vendor-runs.js";

let fake: FakeOpenAI;
let env: BatchEnv;
const MODEL = "gpt-5-mini";
const SCHEMA = {
  type: "object",
  properties: {
    severity: { type: "string", enum: ["low", "medium", "high"] },
    component: { type: "string" },
  },
  required: ["severity", "component"],
  additionalProperties: false,
};

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: `sk-openai-from-secret-${Date.now()}` });
  env = await startBatchEnv("batch-openai", {
    baseUrls: { openai: fake.url },
    secrets: { "openai-key": fake.apiKey },
  });
  await createBatchDefinition(env, "triage", {
    model: MODEL,
    keyName: "OPENAI_API_KEY",
    keyRef: "openai-key",
    schema: SCHEMA,
  });
  await createStation(env, "triage", "triage");
});

afterAll(async () => {
  await env?.close();
  await fake?.close();
});

const codexFailure = (uid: string, reason: string) => [
  { type: "thread.started", thread_id: uid },
  { type: "turn.started" },
  { type: "error", message: reason },
  { type: "turn.failed", error: { message: reason } },
];

const vendor: BatchVendorRow<OpenAIOutcome> = {
  provider: "openai",
  station: "triage",
  get fake() {
    return fake;
  },
  pollPath: (batchId) => `/v1/batches/${batchId}`,
  expectRunning: (_running, batchId) => expect(batchId).toMatch(/^batch_/),
  // Cleanup: the batch cannot be deleted, its input, output and error files are.
  expectCleanedUp(batchId) {
    const b = fake.batches.get(batchId);
    const fileIds = [b?.inputFileId, b?.outputFileId, b?.errorFileId].filter((x): x is string => !!x);
    expect(fileIds[0]).toBe(b?.inputFileId);
    for (const id of fileIds) expect(fake.files.get(id)?.deleted, `file ${id} deleted`).toBe(true);
  },
};
const runTo = (name: string, outcome: OpenAIOutcome) => runVendorTo(env, vendor, name, outcome);

describe("OpenAI batch outcomes through the controller", () => {
  it("succeeded: codex exec --json lines, strict structured output request, sinks in order", async () => {
    const before = await metricValue(env.metrics, "controller_runs_completed_total", {
      phase: "Succeeded",
      exit_code: "0",
    });
    const answer = '{"severity":"high","component":"login"}';
    const { done, batchId, uid } = await runTo("ok-1", { type: "succeeded", text: answer });
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0, batchProvider: "openai" });
    const lines = outputLines(done);
    expect(lines).toEqual([
      JSON.stringify({ type: "thread.started", thread_id: uid }),
      JSON.stringify({ type: "turn.started" }),
      JSON.stringify({ type: "item.completed", item: { id: "item_0", type: "agent_message", text: answer } }),
      JSON.stringify({
        type: "turn.completed",
        usage: { input_tokens: 48, cached_input_tokens: 0, output_tokens: 75, reasoning_output_tokens: 64 },
      }),
    ]);

    const upload = fake.requests.find((r) => r.method === "POST" && r.path === "/v1/files");
    expect(upload?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    const b = fake.batches.get(batchId);
    expect(b?.endpoint).toBe("/v1/responses");
    expect(b?.outputFileId).toBeTruthy();
    expect(fake.files.get(b?.outputFileId as string)?.deleted).toBe(true);
    expect(b?.lines[0]).toMatchObject({
      custom_id: uid,
      method: "POST",
      url: "/v1/responses",
      body: {
        model: MODEL,
        input: "Summarise this ticket: ticket of ok-1",
        max_output_tokens: 16000,
        text: { format: { type: "json_schema", strict: true, schema: SCHEMA } },
      },
    });

    // select lets message and result lines through: only the agent_message is a message line.
    const events = await waitEvent(env, "ok-1", isLifecycle("succeeded"), "agent/succeeded");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
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

  it.each<{ name: string; outcome: OpenAIOutcome; reason: string }>([
    {
      name: "refusal",
      outcome: { type: "refusal", refusal: "I can't help with that." },
      reason: "I can't help with that.",
    },
    {
      name: "incomplete",
      outcome: { type: "incomplete", reason: "max_output_tokens" },
      reason: "Incomplete response returned, reason: max_output_tokens",
    },
    {
      name: "request-failed",
      outcome: {
        type: "request-failed",
        statusCode: 400,
        error: { message: "Invalid 'input': string too long.", type: "invalid_request_error" },
      },
      reason: "Invalid 'input': string too long.",
    },
    { name: "no-result", outcome: { type: "no-result" }, reason: "batch completed without a result" },
    {
      name: "failed",
      outcome: {
        type: "failed",
        errors: [{ code: "token_limit_exceeded", message: "Enqueued token limit reached." }],
      },
      reason: "batch failed: Enqueued token limit reached.",
    },
    { name: "expired", outcome: { type: "expired" }, reason: "batch expired" },
  ])("$name: Failed with `$reason`, agent/failed batch_failed", async ({ name, outcome, reason }) => {
    const agent = `${name}-1`;
    const { done, uid } = await runTo(agent, outcome);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 1, failureReason: reason });
    expect(outputLines(done).map((l) => JSON.parse(l))).toEqual(codexFailure(uid, reason));
    // None of the failure lines is a message or result line under the codex rules.
    const events = await waitEvent(env, agent, isLifecycle("failed"), "agent/failed");
    expect(events).toEqual([
      { kind: "lifecycle", phase: "agent", status: "started" },
      { kind: "lifecycle", phase: "agent", status: "failed", reason: "batch_failed", exitCode: 1 },
    ]);
  });

  it("poll errors (500, 429, malformed body) keep the Agent Running; it completes once they clear", async () => {
    await pollFaultsThenSuccess(env, vendor, "flaky-1", {
      type: "succeeded",
      text: '{"severity":"low","component":"x"}',
    });
  });

  it("delete in flight: cancel, cleanup waits while cancelling, then deletes the files; the Agent goes", async () => {
    await createAgent(env, "del-1", "triage");
    const running = await waitRunningBatch(env, "del-1");
    const batchId = running.status?.batchId as string;
    const uid = running.metadata.uid as string;
    await env.client.delete(AGENTS, env.ns, "del-1", {});
    await eventually(
      "cancel, then a cleanup attempt",
      () => env.controller.memory.peekBatch(uid)?.lastCleanupAt !== undefined || undefined,
    );
    expect(
      fake.requests.filter((r) => r.method === "POST" && r.path === `/v1/batches/${batchId}/cancel`),
    ).toHaveLength(1);
    expect(fake.batches.get(batchId)?.status).toBe("cancelling");
    const stillThere = await getAgent(env, "del-1");
    expect(stillThere && hasFinalizer(stillThere)).toBe(true);
    expect(stillThere?.status?.batchCleanupAttempts ?? 0).toBe(0);
    const inputFile = fake.batches.get(batchId)?.inputFileId;
    expect(fake.requests.some((r) => r.method === "DELETE" && r.path === `/v1/files/${inputFile}`)).toBe(
      false,
    );
    // The batch settles (cancelled, its error file written); the next cleanup deletes every file.
    fake.advance(10 * 60_000);
    env.skip(16_000);
    await waitGone(env, "del-1");
    const b = fake.batches.get(batchId);
    expect(b?.status).toBe("cancelled");
    const fileIds = [b?.inputFileId, b?.outputFileId, b?.errorFileId].filter((x): x is string => !!x);
    expect(fileIds.length).toBeGreaterThanOrEqual(2);
    for (const id of fileIds) expect(fake.files.get(id)?.deleted, `file ${id} deleted`).toBe(true);
  });
});
