import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, type OpenAIOutcome, startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { OpenAIBatchProvider } from "./openai.js";
import type { BatchSubmitRequest } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
const MODEL = "gpt-5-mini";

let fake: FakeOpenAI;
let provider: OpenAIBatchProvider;

beforeEach(async () => {
  fake = await startFakeOpenAI();
  provider = new OpenAIBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
});
afterEach(() => fake.close());

const SCHEMA = {
  type: "object",
  properties: {
    severity: { type: "string", enum: ["low", "medium", "high"] },
    component: { type: "string" },
  },
  required: ["severity", "component"],
  additionalProperties: false,
};

const request = (over: Partial<BatchSubmitRequest> = {}): BatchSubmitRequest => ({
  agentUid: UID,
  model: MODEL,
  prompt: "Classify this support ticket",
  maxTokens: 16000,
  outputSchema: SCHEMA,
  apiKey: fake.apiKey,
  ...over,
});
const ctx = () => ({ agentUid: UID, model: MODEL, apiKey: fake.apiKey });

/** Runs the batch through validating → in_progress → finalizing → completed. */
const complete = () => fake.advance(61_000);

describe("openai submit", () => {
  it("uploads a one-line JSONL /v1/responses call (purpose=batch), then creates a 24h batch over it", async () => {
    const { batchId } = await provider.submit(request());
    expect(batchId).toMatch(/^batch_/);
    const [upload, create] = fake.requests;
    expect(upload?.method).toBe("POST");
    expect(upload?.path).toBe("/v1/files");
    expect(upload?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(upload?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    const input = [...fake.files.values()][0];
    expect(input?.purpose).toBe("batch");
    expect(input?.content).toBe(
      `${JSON.stringify({
        custom_id: UID,
        method: "POST",
        url: "/v1/responses",
        body: {
          model: MODEL,
          input: "Classify this support ticket",
          max_output_tokens: 16000,
          store: false,
          text: { format: { type: "json_schema", name: "agent_output", strict: true, schema: SCHEMA } },
        },
      })}\n`,
    );
    expect(create?.path).toBe("/v1/batches");
    expect(create?.body).toBe(
      JSON.stringify({
        input_file_id: input?.id,
        endpoint: "/v1/responses",
        completion_window: "24h",
        metadata: { agent_uid: UID },
      }),
    );
  });

  it("without a schema the line carries no text.format", async () => {
    await provider.submit(request({ outputSchema: undefined }));
    const line = JSON.parse([...fake.files.values()][0]?.content ?? "");
    expect(line.body).toEqual({
      model: MODEL,
      input: "Classify this support ticket",
      max_output_tokens: 16000,
      store: false,
    });
  });

  it("deletes the uploaded file when the batch create is refused for good (4xx)", async () => {
    fake.inject({ kind: "status", status: 400, method: "POST", path: "/v1/batches" });
    await expect(provider.submit(request())).rejects.toMatchObject({
      name: "BatchProviderError",
      status: 400,
      permanent: true,
    });
    const input = [...fake.files.values()][0];
    expect(input?.deleted).toBe(true);
  });

  it("discardUpload deletes a leftover upload; one already gone is not an error", async () => {
    fake.inject({ kind: "status", status: 503, method: "POST", path: "/v1/batches" });
    const err = await provider.submit(request()).catch((e) => e);
    await provider.discardUpload(err.inputFileId, fake.apiKey);
    expect(fake.files.get(err.inputFileId)?.deleted).toBe(true);
    await expect(provider.discardUpload(err.inputFileId, fake.apiKey)).resolves.toBeUndefined();
  });

  // docs/decisions.md D-101: a retried submit must not upload a new file each time.
  it("keeps the upload when the batch create fails transiently, and the retry reuses it", async () => {
    fake.inject({ kind: "status", status: 500, method: "POST", path: "/v1/batches" });
    fake.inject({ kind: "status", status: 429, retryAfter: 7, method: "POST", path: "/v1/batches" });
    const first = await provider.submit(request()).catch((e) => e);
    expect(first).toMatchObject({ status: 500, permanent: false });
    const fileId = first.inputFileId as string;
    expect(fake.files.get(fileId)?.deleted).toBe(false);
    const second = await provider.submit(request({ inputFileId: fileId })).catch((e) => e);
    expect(second).toMatchObject({ status: 429, retryAfterSeconds: 7, inputFileId: fileId });
    const { batchId } = await provider.submit(request({ inputFileId: fileId }));
    expect(fake.batches.get(batchId)?.inputFileId).toBe(fileId);
    expect(fake.requests.filter((r) => r.path === "/v1/files" && r.method === "POST")).toHaveLength(1);
    expect(fake.files.size).toBe(1);
  });
});

const OPEN = [`{"type":"thread.started","thread_id":"${UID}"}`, '{"type":"turn.started"}'];
const failed = (reason: string) => [
  ...OPEN,
  `{"type":"error","message":${JSON.stringify(reason)}}`,
  `{"type":"turn.failed","error":{"message":${JSON.stringify(reason)}}}`,
];

describe("openai poll", () => {
  it("reproduces the seed's codex lines for a completed batch", async () => {
    fake.script({ type: "succeeded", text: '{"severity":"high","component":"login"}' });
    const { batchId } = await provider.submit(request());
    for (const [ms, status] of [
      [0, "validating"],
      [1_000, "in_progress"],
      [59_000, "finalizing"],
    ] as const) {
      fake.advance(ms);
      expect(fake.batches.get(batchId)?.status).toBe(status);
      expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    }
    fake.advance(1_000);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "succeeded",
      lines: [
        `{"type":"thread.started","thread_id":"${UID}"}`,
        '{"type":"turn.started"}',
        '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"{\\"severity\\":\\"high\\",\\"component\\":\\"login\\"}"}}',
        '{"type":"turn.completed","usage":{"input_tokens":48,"cached_input_tokens":0,"output_tokens":75,"reasoning_output_tokens":64}}',
      ],
    });
  });

  it("joins the text of every message item and reads cached and reasoning tokens", async () => {
    fake.script({
      type: "succeeded",
      response: {
        output: [
          { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "thinking" }] },
          {
            type: "message",
            id: "m1",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "a", annotations: [], logprobs: [] }],
          },
          {
            type: "message",
            id: "m2",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "b", annotations: [], logprobs: [] }],
          },
        ],
        usage: {
          input_tokens: 1000,
          input_tokens_details: { cached_tokens: 800, cache_write_tokens: 0 },
          output_tokens: 30,
          output_tokens_details: { reasoning_tokens: 20 },
          total_tokens: 1030,
        },
      },
    });
    const { batchId } = await provider.submit(request());
    complete();
    const got = await provider.poll(batchId, ctx());
    if (got.state !== "ended") throw new Error("expected ended");
    expect(got.lines.slice(2)).toEqual([
      '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ab"}}',
      '{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":30,"reasoning_output_tokens":20}}',
    ]);
  });

  it.each<{
    name: string;
    outcome: OpenAIOutcome;
    advance?: number;
    reason: string;
    schema?: Record<string, unknown>;
  }>([
    {
      name: "incomplete response",
      outcome: { type: "incomplete", reason: "max_output_tokens" },
      reason: "Incomplete response returned, reason: max_output_tokens",
    },
    {
      name: "refusal only",
      outcome: { type: "refusal", refusal: "I can't help with that." },
      reason: "I can't help with that.",
    },
    {
      name: "response status failed",
      outcome: { type: "response-failed", error: { code: "server_error", message: "The model failed." } },
      reason: "The model failed.",
    },
    {
      name: "failed request line in the error file",
      outcome: {
        type: "request-failed",
        statusCode: 400,
        error: { message: "Invalid 'input': string too long.", type: "invalid_request_error" },
      },
      reason: "Invalid 'input': string too long.",
    },
    {
      name: "error line without a response",
      outcome: { type: "line-error", error: { code: "batch_cancelled", message: "Request was not run." } },
      reason: "Request was not run.",
    },
    {
      name: "completed without a result",
      outcome: { type: "no-result" },
      reason: "batch completed without a result",
    },
    {
      name: "batch failed with its first error",
      outcome: {
        type: "failed",
        errors: [
          { code: "token_limit_exceeded", message: "Enqueued token limit reached." },
          { code: "other", message: "second" },
        ],
      },
      advance: 1_000,
      reason: "batch failed: Enqueued token limit reached.",
    },
    {
      name: "batch failed without errors",
      outcome: { type: "failed" },
      advance: 1_000,
      reason: "batch failed",
    },
    { name: "batch expired", outcome: { type: "expired" }, advance: 24 * 3600_000, reason: "batch expired" },
    {
      name: "strict schema without additionalProperties fails the request",
      outcome: { type: "succeeded" },
      schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
      reason:
        "Invalid schema for response_format 'agent_output': In context=(), 'additionalProperties' is required to be supplied and to be false.",
    },
  ])("$name", async ({ outcome, advance, reason, schema }) => {
    fake.script(outcome);
    const { batchId } = await provider.submit(request(schema ? { outputSchema: schema } : {}));
    const total = advance ?? 61_000;
    fake.advance(total - 1);
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(1);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "failed",
      failureReason: reason,
      lines: failed(reason),
    });
  });

  it("a cancelled batch stays cancelling, then reads batch cancelled", async () => {
    const { batchId } = await provider.submit(request());
    fake.advance(5_000);
    await provider.cancel(batchId, fake.apiKey);
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(10 * 60_000);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "failed",
      failureReason: "batch cancelled",
      lines: failed("batch cancelled"),
    });
  });
});

describe("openai cancel and cleanup", () => {
  it("waits for a cancelling batch to settle, then deletes input, output and error files", async () => {
    const { batchId } = await provider.submit(request());
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "not_settled" });
    await provider.cancel(batchId, fake.apiKey);
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "not_settled" });
    expect(fake.requests.some((r) => r.method === "DELETE")).toBe(false);

    fake.advance(10 * 60_000);
    const b = fake.batches.get(batchId);
    expect(b?.status).toBe("cancelled");
    expect(b?.errorFileId).toBeDefined();
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    const deleted = fake.requests.filter((r) => r.method === "DELETE").map((r) => r.path);
    expect(deleted).toEqual([`/v1/files/${b?.inputFileId}`, `/v1/files/${b?.errorFileId}`]);
    expect([...fake.files.values()].every((f) => f.deleted)).toBe(true);
  });

  it("a partial cleanup throws after trying every file, and the retry finishes the rest (404 = deleted)", async () => {
    // The line fails, so the settled batch has an input file and an error file (no output file).
    fake.script({ type: "request-failed", error: { message: "bad", type: "invalid_request_error" } });
    const { batchId } = await provider.submit(request());
    complete();
    const b = fake.batches.get(batchId);
    expect(b?.errorFileId).toBeDefined();
    fake.inject({ kind: "status", status: 500, method: "DELETE", path: `/v1/files/${b?.inputFileId}` });
    await expect(provider.cleanup(batchId, fake.apiKey)).rejects.toMatchObject({
      name: "BatchProviderError",
      status: 500,
      message: expect.stringContaining("1 of 2 batch files not deleted"),
    });
    // The error file was still deleted on the failed attempt.
    expect(fake.files.get(b?.errorFileId as string)?.deleted).toBe(true);
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    expect(fake.files.get(b?.inputFileId as string)?.deleted).toBe(true);
    const lastTwo = fake.requests.slice(-2).map((r) => r.path);
    expect(lastTwo).toEqual([`/v1/files/${b?.inputFileId}`, `/v1/files/${b?.errorFileId}`]);
  });

  it("a completed batch with an output file has all three of its files deleted", async () => {
    const { batchId } = await provider.submit(request());
    complete();
    const b = fake.batches.get(batchId);
    expect(b?.outputFileId).toBeDefined();
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    expect(fake.files.get(b?.inputFileId as string)?.deleted).toBe(true);
    expect(fake.files.get(b?.outputFileId as string)?.deleted).toBe(true);
  });

  it("cancelling a finished batch is not an error", async () => {
    const { batchId } = await provider.submit(request());
    complete();
    await expect(provider.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
    expect(fake.batches.get(batchId)?.status).toBe("completed");
  });
});
