/**
 * The fake provider servers' own contract (test/fakes/providers/README.md): the parts the
 * controller's integration tests rely on that the batch clients' own tests (src/batch/*.test.ts)
 * do not already pin.
 */
import { afterEach, describe, expect, it } from "vitest";
import { providerFor } from "../../../src/batch/index.js";
import { startFakeAnthropic } from "./anthropic.js";
import { FakeClock } from "./base.js";
import { startFakeGemini } from "./gemini.js";
import { startFakeOpenAI } from "./openai.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

// biome-ignore lint/suspicious/noExplicitAny: the tests walk arbitrary provider JSON.
type Json = any;

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

describe("fake auth errors use each vendor's envelope", () => {
  it("anthropic: 401 authentication_error", async () => {
    const fake = await startFakeAnthropic();
    closers.push(fake.close);
    const got = await json(`${fake.url}/v1/messages/batches/x`, {
      headers: { "x-api-key": "bad", "anthropic-version": "2023-06-01" },
    });
    expect(got).toEqual({
      status: 401,
      body: {
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
        request_id: expect.any(String),
      },
    });
  });

  it("gemini: 400 INVALID_ARGUMENT for a bad key, 403 without one, and ?key= is accepted", async () => {
    const fake = await startFakeGemini();
    closers.push(fake.close);
    expect(await json(`${fake.url}/v1beta/batches/x`, { headers: { "x-goog-api-key": "bad" } })).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message: "API key not valid. Please pass a valid API key.",
          status: "INVALID_ARGUMENT",
        },
      },
    });
    expect((await json(`${fake.url}/v1beta/batches/x`)).status).toBe(403);
    expect((await json(`${fake.url}/v1beta/batches/x?key=${fake.apiKey}`)).body.error.status).toBe(
      "NOT_FOUND",
    );
  });

  it("openai: 401 invalid_api_key", async () => {
    const fake = await startFakeOpenAI();
    closers.push(fake.close);
    const got = await json(`${fake.url}/batches/x`, { headers: { authorization: "Bearer sk-wrongkey" } });
    expect(got).toEqual({
      status: 401,
      body: {
        error: {
          message: "Incorrect API key provided: sk-wrong***.",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      },
    });
  });
});

describe("fake behaviour", () => {
  it("one FakeClock drives several fakes together", async () => {
    const clock = new FakeClock();
    const a = await startFakeAnthropic({ clock });
    const g = await startFakeGemini({ clock });
    closers.push(a.close, g.close);
    const anthropic = providerFor("anthropic", { baseUrl: a.url });
    const gemini = providerFor("gemini", { baseUrl: g.url });
    const req = { agentUid: "u1", prompt: "p", maxTokens: 100 };
    const ab = await anthropic.submit({ ...req, model: "claude-opus-5-5", apiKey: a.apiKey });
    const gb = await gemini.submit({ ...req, model: "gemini-3.1-flash-lite", apiKey: g.apiKey });
    a.advance(60_000); // moves the shared clock; the Gemini batch ends on its next read
    expect(
      await anthropic.poll(ab.batchId, { agentUid: "u1", model: "claude-opus-5-5", apiKey: a.apiKey }),
    ).toMatchObject({
      outcome: "succeeded",
    });
    expect(
      await gemini.poll(gb.batchId, { agentUid: "u1", model: "gemini-3.1-flash-lite", apiKey: g.apiKey }),
    ).toMatchObject({
      outcome: "succeeded",
    });
  });

  it("a delay fault still answers normally, and a fault only hits matching requests", async () => {
    const fake = await startFakeAnthropic();
    closers.push(fake.close);
    const p = providerFor("anthropic", { baseUrl: fake.url });
    fake.inject({ kind: "status", status: 500, method: "DELETE", times: Number.POSITIVE_INFINITY });
    fake.inject({ kind: "delay", ms: 20, method: "POST" });
    const { batchId } = await p.submit({
      agentUid: "u",
      model: "m",
      prompt: "p",
      maxTokens: 1,
      apiKey: fake.apiKey,
    });
    expect(fake.batches.has(batchId)).toBe(true);
    fake.finish(batchId);
    await expect(p.cleanup(batchId, fake.apiKey)).rejects.toMatchObject({ status: 500 });
    await expect(p.cleanup(batchId, fake.apiKey)).rejects.toMatchObject({ status: 500 });
    fake.clearFaults();
    expect(await p.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
  });

  it("openai: an input file that fails validation makes the batch failed with the first error", async () => {
    const fake = await startFakeOpenAI();
    closers.push(fake.close);
    const auth = { authorization: `Bearer ${fake.apiKey}` };
    const form = new FormData();
    form.append("purpose", "batch");
    form.append(
      "file",
      new Blob(['{"custom_id":"u","method":"GET","url":"/v1/responses","body":{}}\n']),
      "in.jsonl",
    );
    const file = await json(`${fake.url}/files`, { method: "POST", headers: auth, body: form });
    expect(file.body).toMatchObject({
      object: "file",
      purpose: "batch",
      filename: "in.jsonl",
      status: "processed",
    });
    const batch = await json(`${fake.url}/batches`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        input_file_id: file.body.id,
        endpoint: "/v1/responses",
        completion_window: "24h",
      }),
    });
    expect(batch.body.status).toBe("validating");
    fake.advance(1_000);
    const p = providerFor("openai", { baseUrl: fake.url });
    expect(
      await p.poll(batch.body.id, { agentUid: "u", model: "gpt-5-mini", apiKey: fake.apiKey }),
    ).toMatchObject({
      outcome: "failed",
      failureReason: "batch failed: Invalid value for 'method'. Only 'POST' is supported.",
    });
  });

  it("openai: a completion_window other than 24h is rejected at create", async () => {
    const fake = await startFakeOpenAI();
    closers.push(fake.close);
    const got = await json(`${fake.url}/batches`, {
      method: "POST",
      headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ input_file_id: "file-x", endpoint: "/v1/responses", completion_window: "1h" }),
    });
    expect(got.status).toBe(400);
    expect(got.body.error.param).toBe("completion_window");
  });

  it("gemini: the operation carries the batch under metadata and the output twice when done", async () => {
    const fake = await startFakeGemini();
    closers.push(fake.close);
    const p = providerFor("gemini", { baseUrl: fake.url });
    const { batchId } = await p.submit({
      agentUid: "u",
      model: "gemini-3.1-flash-lite",
      prompt: "p",
      maxTokens: 9,
      apiKey: fake.apiKey,
    });
    fake.finish(batchId);
    const op = await json(`${fake.url}/v1beta/batches/${batchId}`, {
      headers: { "x-goog-api-key": fake.apiKey },
    });
    expect(op.body).toMatchObject({
      name: `batches/${batchId}`,
      done: true,
      metadata: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        model: "models/gemini-3.1-flash-lite",
        displayName: "u",
        state: "BATCH_STATE_SUCCEEDED",
        batchStats: { requestCount: "1", successfulRequestCount: "1" },
      },
      response: {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
      },
    });
    expect(op.body.response.inlinedResponses).toEqual(op.body.metadata.output.inlinedResponses);
    expect(op.body.response.inlinedResponses.inlinedResponses[0].metadata).toEqual({ key: "u" });
  });
});
