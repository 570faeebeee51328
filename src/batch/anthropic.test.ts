import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { AnthropicBatchProvider } from "./anthropic.js";
import type { BatchSubmitRequest } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";

let fake: FakeAnthropic;
let provider: AnthropicBatchProvider;

beforeEach(async () => {
  fake = await startFakeAnthropic();
  provider = new AnthropicBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
});
afterEach(() => fake.close());

const request = (over: Partial<BatchSubmitRequest> = {}): BatchSubmitRequest => ({
  agentUid: UID,
  model: "claude-sonnet-4-6",
  prompt: "Summarise this support ticket",
  maxTokens: 16000,
  apiKey: fake.apiKey,
  ...over,
});
const ctx = (model = "claude-sonnet-4-6") => ({ agentUid: UID, model, apiKey: fake.apiKey });

describe("anthropic submit", () => {
  it("sends one request keyed by the agent uid, with auth and version headers", async () => {
    const { batchId } = await provider.submit(request());
    expect(batchId).toMatch(/^msgbatch_/);
    const sent = fake.requests[0];
    expect(sent?.method).toBe("POST");
    expect(sent?.path).toBe("/v1/messages/batches");
    expect(sent?.headers["x-api-key"]).toBe(fake.apiKey);
    expect(sent?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(sent?.body).toBe(
      JSON.stringify({
        requests: [
          {
            custom_id: UID,
            params: {
              model: "claude-sonnet-4-6",
              max_tokens: 16000,
              messages: [{ role: "user", content: "Summarise this support ticket" }],
            },
          },
        ],
      }),
    );
  });

  it("maps output.schema to output_config.format json_schema", async () => {
    const schema = { type: "object", properties: { severity: { type: "string" } }, required: ["severity"] };
    await provider.submit(request({ outputSchema: schema, maxTokens: 500 }));
    expect(fake.requests[0]?.json).toEqual({
      requests: [
        {
          custom_id: UID,
          params: {
            model: "claude-sonnet-4-6",
            max_tokens: 500,
            messages: [{ role: "user", content: "Summarise this support ticket" }],
            output_config: { format: { type: "json_schema", schema } },
          },
        },
      ],
    });
  });

  it("surfaces a rejected create (wrong key) as BatchProviderError with the API's error", async () => {
    await expect(provider.submit(request({ apiKey: "nope" }))).rejects.toMatchObject({
      name: "BatchProviderError",
      status: 401,
      message: expect.stringContaining("authentication_error: invalid x-api-key"),
    });
  });
});

const INIT = (model: string) =>
  `{"type":"system","subtype":"init","session_id":"${UID}","tools":[],"mcp_servers":[],"model":"${model}","permissionMode":"default","slash_commands":[],"apiKeySource":"ANTHROPIC_API_KEY","output_style":"default"}`;

const failureResult = (reason: string) =>
  `{"type":"result","subtype":"success","is_error":true,"duration_ms":0,"duration_api_ms":0,"num_turns":1,"result":${JSON.stringify(reason)},"stop_reason":null,"session_id":"${UID}","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[]}`;

describe("anthropic poll", () => {
  it("is in_progress until the batch ends, then prints the CLI's init/assistant/result lines", async () => {
    fake.script({ type: "succeeded", text: '{"severity":"high"}' });
    const { batchId } = await provider.submit(request());
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(60_000);
    const got = await provider.poll(batchId, ctx());
    expect(got).toEqual({
      state: "ended",
      outcome: "succeeded",
      lines: [
        INIT("claude-sonnet-4-6"),
        `{"type":"assistant","message":{"id":"msg_fake000001","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"{\\"severity\\":\\"high\\"}"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":48,"output_tokens":75,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens_details":{"thinking_tokens":40},"server_tool_use":null,"service_tier":"batch","inference_geo":null}},"parent_tool_use_id":null,"session_id":"${UID}"}`,
        `{"type":"result","subtype":"success","is_error":false,"duration_ms":0,"duration_api_ms":0,"num_turns":1,"result":"{\\"severity\\":\\"high\\"}","stop_reason":"end_turn","session_id":"${UID}","total_cost_usd":0.0006345,"usage":{"input_tokens":48,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":75,"service_tier":"batch","cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}},"modelUsage":{"claude-sonnet-4-6":{"inputTokens":48,"outputTokens":75,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.0006345}},"permission_denials":[],"terminal_reason":"completed"}`,
      ],
    });
    // The results were read from the batch's results_url with the same auth.
    const results = fake.requests.find((r) => r.path.endsWith("/results"));
    expect(results?.headers["x-api-key"]).toBe(fake.apiKey);
    expect(results?.headers["anthropic-version"]).toBe("2023-06-01");
  });

  it("drops thinking blocks, joins text blocks, and omits cache fields the provider does not report", async () => {
    fake.script({
      type: "succeeded",
      message: {
        content: [
          { type: "thinking", thinking: "hmm", signature: "s" },
          { type: "text", text: "Part one. " },
          { type: "redacted_thinking", data: "xx" },
          { type: "text", text: "Part two." },
        ],
        usage: { input_tokens: 10, output_tokens: 20 },
      },
    });
    const { batchId } = await provider.submit(request({ model: "claude-opus-5-5" }));
    fake.advance(60_000);
    const got = await provider.poll(batchId, ctx("claude-opus-5-5"));
    if (got.state !== "ended") throw new Error("expected ended");
    const assistant = JSON.parse(got.lines[1] as string);
    expect(assistant.message.content).toEqual([
      { type: "text", text: "Part one. " },
      { type: "text", text: "Part two." },
    ]);
    const result = JSON.parse(got.lines[2] as string);
    expect(result.result).toBe("Part one. Part two.");
    expect(result.usage).toEqual({ input_tokens: 10, output_tokens: 20 });
    // claude-opus-5-5 batch: $2 / $10 per MTok.
    expect(result.total_cost_usd).toBe((10 * 2 + 20 * 10) / 1e6);
    expect(Object.keys(result.modelUsage)).toEqual(["claude-opus-5-5"]);
  });

  it.each([
    {
      name: "errored request → <type>: <message>",
      outcome: {
        type: "errored",
        error: { type: "invalid_request_error", message: "max_tokens: too large" },
      } as const,
      advance: 60_000,
      reason: "invalid_request_error: max_tokens: too large",
    },
    {
      name: "expired request",
      outcome: { type: "expired" } as const,
      advance: 24 * 3600_000,
      reason: "batch request expired",
    },
    {
      name: "canceled request",
      outcome: { type: "canceled" } as const,
      advance: 60_000,
      reason: "batch request canceled",
    },
  ])("$name", async ({ outcome, advance, reason }) => {
    fake.script(outcome);
    const { batchId } = await provider.submit(request());
    fake.advance(advance - 1);
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    fake.advance(1);
    expect(await provider.poll(batchId, ctx())).toEqual({
      state: "ended",
      outcome: "failed",
      failureReason: reason,
      lines: [INIT("claude-sonnet-4-6"), failureResult(reason)],
    });
  });

  it("a request the API rejects asynchronously comes back errored", async () => {
    const { batchId } = await provider.submit(request({ maxTokens: 0 }));
    fake.advance(60_000);
    const got = await provider.poll(batchId, ctx());
    expect(got).toMatchObject({
      outcome: "failed",
      failureReason: "invalid_request_error: max_tokens: Input should be greater than or equal to 1",
    });
  });
});

describe("anthropic cancel and cleanup", () => {
  it("cancel moves the batch to canceling; it ends canceled, and only then can be deleted", async () => {
    const { batchId } = await provider.submit(request());
    await provider.cancel(batchId, fake.apiKey);
    expect(fake.batches.get(batchId)?.status).toBe("canceling");
    expect(await provider.poll(batchId, ctx())).toEqual({ state: "in_progress" });
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "not_settled" });
    expect(fake.requests.some((r) => r.method === "DELETE")).toBe(false);

    fake.advance(30_000);
    expect(await provider.poll(batchId, ctx())).toMatchObject({
      outcome: "failed",
      failureReason: "batch request canceled",
    });
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
    expect(fake.batches.get(batchId)?.deleted).toBe(true);
    // Already gone: a 404 counts as deleted.
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
  });

  it("an in-progress batch that was not cancelled is not settled", async () => {
    const { batchId } = await provider.submit(request());
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "not_settled" });
  });

  it("cancelling a batch that already ended is not an error", async () => {
    const { batchId } = await provider.submit(request());
    fake.advance(60_000);
    await expect(provider.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
    expect(fake.batches.get(batchId)?.status).toBe("ended");
  });

  it("cancelling a batch that is gone is not an error", async () => {
    await expect(provider.cancel("msgbatch_missing", fake.apiKey)).resolves.toBeUndefined();
  });

  it("a failed DELETE throws, and the next attempt finishes", async () => {
    const { batchId } = await provider.submit(request());
    fake.advance(60_000);
    fake.inject({ kind: "status", status: 500, method: "DELETE" });
    await expect(provider.cleanup(batchId, fake.apiKey)).rejects.toMatchObject({ status: 500 });
    expect(await provider.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
  });

  it("the fake refuses to delete an unended batch with the documented error shape", async () => {
    const { batchId } = await provider.submit(request());
    const res = await fetch(`${fake.url}/v1/messages/batches/${batchId}`, {
      method: "DELETE",
      headers: { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });
});
