import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeGemini, type GeminiOutcome, startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { GeminiBatchProvider } from "./gemini.js";
import { translateGeminiOperation } from "./gemini-lines.js";
import type { BatchSubmitRequest } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
const MODEL = "gemini-3.1-flash-lite";

let fake: FakeGemini;
let provider: GeminiBatchProvider;

beforeEach(async () => {
  fake = await startFakeGemini();
  provider = new GeminiBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
});
afterEach(() => fake.close());

const request = (over: Partial<BatchSubmitRequest> = {}): BatchSubmitRequest => ({
  agentUid: UID,
  model: MODEL,
  prompt: "Classify this support ticket",
  maxTokens: 16000,
  apiKey: fake.apiKey,
  ...over,
});
const ctx = () => ({ agentUid: UID, model: MODEL, apiKey: fake.apiKey });

const SCHEMA = {
  type: "object",
  properties: {
    severity: { type: "string", enum: ["low", "medium", "high"] },
    component: { type: "string" },
  },
  required: ["severity", "component"],
};

describe("gemini submit", () => {
  it("sends one inline request through models/<model>:batchGenerateContent", async () => {
    const { batchId } = await provider.submit(request({ outputSchema: SCHEMA }));
    expect(batchId).toBe("fakebatch000001");
    const sent = fake.requests[0];
    expect(sent?.method).toBe("POST");
    expect(sent?.path).toBe(`/v1beta/models/${MODEL}:batchGenerateContent`);
    expect(sent?.headers["x-goog-api-key"]).toBe(fake.apiKey);
    expect(sent?.body).toBe(
      JSON.stringify({
        batch: {
          displayName: UID,
          inputConfig: {
            requests: {
              requests: [
                {
                  request: {
                    contents: [{ role: "user", parts: [{ text: "Classify this support ticket" }] }],
                    generationConfig: {
                      maxOutputTokens: 16000,
                      responseMimeType: "application/json",
                      responseJsonSchema: SCHEMA,
                    },
                  },
                  metadata: { key: UID },
                },
              ],
            },
          },
        },
      }),
    );
  });

  it("without a schema sets only maxOutputTokens", async () => {
    await provider.submit(request({ maxTokens: 300 }));
    const body = fake.requests[0]?.json as {
      batch: { inputConfig: { requests: { requests: { request: unknown }[] } } };
    };
    expect(body.batch.inputConfig.requests.requests[0]?.request).toEqual({
      contents: [{ role: "user", parts: [{ text: "Classify this support ticket" }] }],
      generationConfig: { maxOutputTokens: 300 },
    });
  });
});

const INIT = `{"type":"init","session_id":"${UID}","model":"${MODEL}"}`;
const ZERO_STATS =
  '"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}';
const errorResult = (message: string, stats = ZERO_STATS) =>
  `{"type":"result","status":"error","error":{"type":"BatchError","message":${JSON.stringify(message)}},${stats}}`;

describe("gemini poll", () => {
  it("reproduces the seed's example lines byte for byte", async () => {
    fake.script({
      type: "succeeded",
      text: '{"severity":"high","component":"login"}',
      response: {
        usageMetadata: { promptTokenCount: 48, candidatesTokenCount: 13, totalTokenCount: 61 },
        modelVersion: MODEL,
      },
    });
    const { batchId } = await provider.submit(request({ outputSchema: SCHEMA }));
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(1_000);
    expect(fake.batches.get(batchId)?.state).toBe("RUNNING");
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(59_000);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "succeeded",
      lines: [
        `{"type":"init","session_id":"${UID}","model":"gemini-3.1-flash-lite"}`,
        '{"type":"message","role":"assistant","content":"{\\"severity\\":\\"high\\",\\"component\\":\\"login\\"}","delta":true}',
        '{"type":"result","status":"success","stats":{"total_tokens":61,"input_tokens":48,"output_tokens":13,"cached":0,"input":48,"duration_ms":0,"tool_calls":0,"models":{"gemini-3.1-flash-lite":{"total_tokens":61,"input_tokens":48,"output_tokens":13,"cached":0,"input":48}}}}',
      ],
    });
  });

  it("leaves thought parts out, keys stats by modelVersion and counts cached tokens", async () => {
    fake.script({
      type: "succeeded",
      thought: "secret reasoning",
      text: "answer",
      response: {
        usageMetadata: {
          promptTokenCount: 100,
          cachedContentTokenCount: 30,
          candidatesTokenCount: 5,
          thoughtsTokenCount: 20,
          totalTokenCount: 125,
        },
        modelVersion: "gemini-3.1-flash-lite-001",
      },
    });
    const { batchId } = await provider.submit(request());
    fake.advance(60_000);
    const got = await provider.poll(batchId, ctx());
    if (got.state !== "ended") throw new Error("expected ended");
    expect(got.lines[1]).toBe('{"type":"message","role":"assistant","content":"answer","delta":true}');
    expect(JSON.parse(got.lines[2] as string).stats).toEqual({
      total_tokens: 125,
      input_tokens: 100,
      output_tokens: 5,
      cached: 30,
      input: 70,
      duration_ms: 0,
      tool_calls: 0,
      models: {
        "gemini-3.1-flash-lite-001": {
          total_tokens: 125,
          input_tokens: 100,
          output_tokens: 5,
          cached: 30,
          input: 70,
        },
      },
    });
  });

  it.each<{ name: string; outcome: GeminiOutcome; advance?: number; reason: string; stats?: string }>([
    {
      name: "blocked prompt",
      outcome: { type: "blocked", blockReason: "SAFETY" },
      reason: "response blocked: SAFETY",
      stats:
        '"stats":{"total_tokens":48,"input_tokens":48,"output_tokens":0,"cached":0,"input":48,"duration_ms":0,"tool_calls":0,"models":{"gemini-3.1-flash-lite":{"total_tokens":48,"input_tokens":48,"output_tokens":0,"cached":0,"input":48}}}',
    },
    {
      name: "failed request",
      outcome: {
        type: "request-error",
        error: { code: 400, message: "Request contains an invalid argument." },
      },
      reason: "Request contains an invalid argument.",
    },
    {
      name: "batch failed with an error",
      outcome: { type: "failed", error: { code: 13, message: "Internal error encountered." } },
      reason: "batch failed: Internal error encountered.",
    },
    { name: "batch failed without an error", outcome: { type: "failed" }, reason: "batch failed" },
    { name: "batch cancelled", outcome: { type: "cancelled" }, reason: "batch cancelled" },
    {
      name: "batch expired with an error",
      outcome: { type: "expired", error: { code: 4, message: "Batch did not finish in time." } },
      advance: 48 * 3600_000,
      reason: "batch expired: Batch did not finish in time.",
    },
  ])("$name", async ({ outcome, advance, reason, stats }) => {
    fake.script(outcome);
    const { batchId } = await provider.submit(request());
    fake.advance((advance ?? 60_000) - 1);
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(1);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "failed",
      failureReason: reason,
      lines: [INIT, errorResult(reason, stats)],
    });
  });

  it("accepts JOB_STATE_ spellings and finds the response by metadata.key", () => {
    const op = {
      name: "batches/x",
      done: true,
      metadata: {
        state: "JOB_STATE_SUCCEEDED",
        output: {
          inlinedResponses: {
            inlinedResponses: [
              { metadata: { key: "someone-else" }, error: { code: 400, message: "not mine" } },
              {
                metadata: { key: UID },
                response: { candidates: [{ content: { parts: [{ text: "mine" }] } }] },
              },
            ],
          },
        },
      },
    };
    const got = translateGeminiOperation(op, { agentUid: UID, model: MODEL });
    expect(got.outcome).toBe("succeeded");
    expect(got.lines[1]).toBe('{"type":"message","role":"assistant","content":"mine","delta":true}');
    // No usage and no modelVersion: zeros keyed by the requested model.
    expect(JSON.parse(got.lines[2] as string).stats.models).toEqual({
      [MODEL]: { total_tokens: 0, input_tokens: 0, output_tokens: 0, cached: 0, input: 0 },
    });
  });
});

describe("gemini cancel and cleanup", () => {
  it("cleanup sends DELETE right after cancel, without waiting for the batch to settle", async () => {
    const slow = await startFakeGemini({ cancelMs: 600_000 });
    try {
      const p = new GeminiBatchProvider({ baseUrl: slow.url });
      const { batchId } = await p.submit(request({ apiKey: slow.apiKey }));
      await p.cancel(batchId, slow.apiKey);
      expect(slow.batches.get(batchId)?.state).not.toBe("CANCELLED");
      expect(await p.cleanup(batchId, slow.apiKey)).toEqual({ state: "done" });
      expect(slow.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        `POST /v1beta/models/${MODEL}:batchGenerateContent`,
        `POST /v1beta/batches/${batchId}:cancel`,
        `DELETE /v1beta/batches/${batchId}`,
      ]);
      expect(slow.batches.get(batchId)?.deleted).toBe(true);
    } finally {
      await slow.close();
    }
  });

  it("a cancel settles later: the batch polls in progress until it reads batch cancelled", async () => {
    const { batchId } = await provider.submit(request());
    await provider.cancel(batchId, fake.apiKey);
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(30_000);
    expect(await provider.poll(batchId, ctx())).toMatchObject({
      outcome: "failed",
      failureReason: "batch cancelled",
    });
  });

  it("cancelling a finished batch is not an error", async () => {
    const { batchId } = await provider.submit(request());
    fake.advance(60_000);
    await expect(provider.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
  });

  it("a batch already deleted (404) counts as deleted; a 503 throws", async () => {
    const { batchId } = await provider.submit(request());
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    fake.inject({ kind: "status", status: 503, method: "DELETE" });
    await expect(provider.cleanup(batchId, fake.apiKey)).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining("UNAVAILABLE"),
    });
  });
});
