/**
 * docs/decisions.md D-111: the provider fakes refuse what the real APIs refuse (docs/batch-providers.md#what-each-api-refuses), so a
 * client bug cannot pass against a fake tuned to it: misspelt fields, unknown models, token limits
 * beyond the model's, schema features the vendor rejects, cancel semantics as documented; and
 * their fault injection reaches submit and cancel, not only GET and DELETE.
 */
import { afterEach, describe, expect, it } from "vitest";
import { providerFor } from "../../../src/batch/index.js";
import type { BatchProviderName, BatchSubmitRequest } from "../../../src/batch/provider.js";
import { startFakeAnthropic } from "./anthropic.js";
import { startFakeGemini } from "./gemini.js";
import { startFakeOpenAI } from "./openai.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
const STRICT_SCHEMA = {
  type: "object",
  properties: { severity: { type: "string" } },
  required: ["severity"],
  additionalProperties: false,
};

async function start(vendor: BatchProviderName) {
  const fake =
    vendor === "anthropic"
      ? await startFakeAnthropic()
      : vendor === "gemini"
        ? await startFakeGemini()
        : await startFakeOpenAI();
  closers.push(fake.close);
  const provider = providerFor(vendor, { baseUrl: fake.url, timeoutMs: 5_000 });
  const model = { anthropic: "claude-sonnet-4-6", gemini: "gemini-3.1-flash-lite", openai: "gpt-5-mini" }[
    vendor
  ];
  const request = (over: Partial<BatchSubmitRequest> = {}): BatchSubmitRequest => ({
    agentUid: UID,
    model,
    prompt: "Classify this ticket",
    maxTokens: 1000,
    apiKey: fake.apiKey,
    ...over,
  });
  /** Submits, ends the batch, polls: the failureReason, or the submit's error message. */
  const outcome = async (over: Partial<BatchSubmitRequest>): Promise<string> => {
    let batchId: string;
    try {
      ({ batchId } = await provider.submit(request(over)));
    } catch (err) {
      return `submit: ${(err as Error).message}`;
    }
    fake.finish(batchId);
    const r = await provider.poll(batchId, {
      agentUid: UID,
      model: over.model ?? model,
      apiKey: fake.apiKey,
    });
    return r.state === "ended" ? `${r.outcome}: ${r.failureReason ?? ""}` : "in_progress";
  };
  return { fake, provider, request, outcome };
}

describe("the fakes refuse what the real APIs refuse", () => {
  it.each([
    // Anthropic validates params asynchronously: the request comes back errored.
    {
      vendor: "anthropic" as const,
      what: "an unknown model",
      over: { model: "claude-sonnet-9" },
      want: "failed: not_found_error: model: claude-sonnet-9",
    },
    {
      vendor: "anthropic" as const,
      what: "max_tokens above the model's limit",
      over: { model: "claude-opus-5-5", maxTokens: 200_000 },
      want: "failed: invalid_request_error: max_tokens: 200000 > 128000, which is the maximum allowed number of output tokens for claude-opus-5-5",
    },
    {
      vendor: "anthropic" as const,
      what: "a schema keyword structured output does not support",
      over: { outputSchema: { type: "object", properties: { s: { type: "string", minLength: 3 } } } },
      want: "failed: invalid_request_error: output_config.format.schema: 'minLength' is not supported in structured output schemas",
    },
    // Gemini refuses at create.
    {
      vendor: "gemini" as const,
      what: "an unknown model",
      over: { model: "gemini-9-ultra" },
      want: "submit: gemini POST /v1beta/models/gemini-9-ultra:batchGenerateContent: HTTP 404: NOT_FOUND: models/gemini-9-ultra is not found for API version v1beta, or is not supported for batchGenerateContent. Call ListModels to see the list of available models and their supported methods.",
    },
    {
      vendor: "gemini" as const,
      what: "maxOutputTokens above the model's limit",
      over: { maxTokens: 100_000 },
      want: "submit: gemini POST /v1beta/models/gemini-3.1-flash-lite:batchGenerateContent: HTTP 400: INVALID_ARGUMENT: Unable to submit request because it has a maxOutputTokens value of 100000 but the supported range is from 1 (inclusive) to 65537 (exclusive). Update the value and try again.",
    },
    {
      vendor: "gemini" as const,
      what: "a JSON-schema keyword responseJsonSchema does not accept",
      over: { outputSchema: { type: "object", properties: { s: { type: "string", pattern: "^a" } } } },
      want: "submit: gemini POST /v1beta/models/gemini-3.1-flash-lite:batchGenerateContent: HTTP 400: INVALID_ARGUMENT: Invalid JSON payload received. Unknown name \"pattern\" at 'batch.input_config.requests.requests[0].request.generation_config.response_json_schema': Cannot find field.",
    },
    // OpenAI reports a refused line in the error file.
    {
      vendor: "openai" as const,
      what: "an unknown model",
      over: { model: "gpt-9" },
      want: "failed: The model 'gpt-9' does not exist or you do not have access to it.",
    },
    {
      vendor: "openai" as const,
      what: "max_output_tokens above the model's limit",
      over: { maxTokens: 200_000 },
      want: "failed: max_output_tokens is too large: 200000. This model supports at most 128000 output tokens, whereas you provided 200000.",
    },
    {
      vendor: "openai" as const,
      what: "a strict schema with allOf",
      over: { outputSchema: { ...STRICT_SCHEMA, allOf: [{ required: ["severity"] }] } },
      want: "failed: Invalid schema for response_format 'agent_output': In context=(), 'allOf' is not permitted.",
    },
    {
      vendor: "openai" as const,
      what: "a strict schema whose root is not an object",
      over: { outputSchema: { type: "array", items: { type: "string" } } },
      want: `failed: Invalid schema for response_format 'agent_output': schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`,
    },
  ])("$vendor: $what", async ({ vendor, over, want }) => {
    const { outcome } = await start(vendor);
    expect(await outcome(over)).toBe(want);
  });

  it("the clients' own requests pass every check", async () => {
    for (const vendor of ["anthropic", "gemini", "openai"] as const) {
      const { outcome } = await start(vendor);
      expect(await outcome({ outputSchema: STRICT_SCHEMA }), vendor).toBe("succeeded: ");
    }
  });

  it("anthropic: a misspelt field is refused, synchronously at the top, as an errored result inside params", async () => {
    const { fake } = await start("anthropic");
    const post = (body: unknown) =>
      fetch(`${fake.url}/v1/messages/batches`, {
        method: "POST",
        headers: {
          "x-api-key": fake.apiKey,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
    const params = {
      model: "claude-sonnet-4-6",
      max_tokens: 100,
      messages: [{ role: "user", content: "p" }],
    };
    const top = await post({ requests: [{ custom_id: UID, params }], request: [] });
    expect(top.status).toBe(400);
    expect(((await top.json()) as { error: unknown }).error).toEqual({
      type: "invalid_request_error",
      message: "request: Extra inputs are not permitted",
    });
    const inner = await post({ requests: [{ custom_id: UID, params: { ...params, max_token: 100 } }] });
    const { id } = (await inner.json()) as { id: string };
    fake.finish(id);
    const results = await (
      await fetch(`${fake.url}/v1/messages/batches/${id}/results`, {
        headers: { "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" },
      })
    ).text();
    expect(JSON.parse(results).result.error.error).toEqual({
      type: "invalid_request_error",
      message: "max_token: Extra inputs are not permitted",
    });
  });

  it("gemini: a misspelt generationConfig field is refused at create", async () => {
    const { fake } = await start("gemini");
    const res = await fetch(`${fake.url}/v1beta/models/gemini-3.1-flash-lite:batchGenerateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": fake.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        batch: {
          displayName: UID,
          inputConfig: {
            requests: {
              requests: [
                {
                  request: {
                    contents: [{ role: "user", parts: [{ text: "p" }] }],
                    generationConfig: { maxOutputToken: 9 },
                  },
                },
              ],
            },
          },
        },
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      "Invalid JSON payload received. Unknown name \"maxOutputToken\" at 'batch.input_config.requests.requests[0].request.generation_config': Cannot find field.",
    );
  });

  it("openai: an unknown batch-create field is refused, a misspelt line field fails its line; store is honoured", async () => {
    const { fake, provider, request } = await start("openai");
    const res = await fetch(`${fake.url}/batches`, {
      method: "POST",
      headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        input_file_id: "file-x",
        endpoint: "/v1/responses",
        completion_window: "24h",
        window: 1,
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      "Unrecognized request argument supplied: window",
    );
    const { batchId } = await provider.submit(request());
    fake.finish(batchId);
    const openai = fake as Awaited<ReturnType<typeof startFakeOpenAI>>;
    const out = openai.files.get(openai.batches.get(batchId)?.outputFileId ?? "");
    expect(JSON.parse(out?.content ?? "{}").response.body.store).toBe(false);
  });

  it("gemini: a cancel settles later, and a delete does not cancel (the fake records what a delete left running)", async () => {
    const { fake: any, provider, request } = await start("gemini");
    const fake = any as Awaited<ReturnType<typeof startFakeGemini>>;
    const { batchId: cancelled } = await provider.submit(request());
    fake.advance(2_000);
    await provider.cancel(cancelled, fake.apiKey);
    expect(fake.batches.get(cancelled)?.state).toBe("RUNNING");
    await provider.cleanup(cancelled, fake.apiKey);
    expect(fake.batches.get(cancelled)).toMatchObject({ deleted: true, cancelRequestedAt: fake.clock.nowMs });
    const { batchId: orphan } = await provider.submit(request());
    fake.advance(2_000);
    await provider.cleanup(orphan, fake.apiKey);
    expect(fake.batches.get(orphan)).toMatchObject({ deleted: true, deletedInState: "RUNNING" });
    expect(fake.batches.get(orphan)?.cancelRequestedAt).toBeUndefined();
  });
});

describe("fault injection reaches submit and cancel", () => {
  const submitPath = {
    anthropic: "/v1/messages/batches",
    gemini: /:batchGenerateContent$/,
    openai: "/v1/batches",
  } as const;
  const cancelPath = { anthropic: /\/cancel$/, gemini: /:cancel$/, openai: /\/cancel$/ } as const;

  it.each(["anthropic", "gemini", "openai"] as const)("%s", async (vendor) => {
    const { fake, provider, request } = await start(vendor);
    fake.inject({ kind: "status", status: 529, retryAfter: 12, method: "POST", path: submitPath[vendor] });
    await expect(provider.submit(request())).rejects.toMatchObject({
      status: 529,
      retryAfterSeconds: 12,
      permanent: false,
    });
    fake.inject({ kind: "status", status: 401, method: "POST", path: submitPath[vendor] });
    await expect(provider.submit(request())).rejects.toMatchObject({ status: 401, permanent: true });
    const { batchId } = await provider.submit(request());
    fake.inject({ kind: "status", status: 503, method: "POST", path: cancelPath[vendor] });
    await expect(provider.cancel(batchId, fake.apiKey)).rejects.toMatchObject({ status: 503 });
    await expect(provider.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
  });
});
