/**
 * Every vendor: a poll that cannot be answered (5xx, 429, malformed body, timeout, refused
 * connection) throws BatchProviderError for the caller to retry; it is never a run outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import type { FaultRule } from "../../test/fakes/providers/base.js";
import { startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { providerFor } from "./index.js";
import { type BatchProvider, BatchProviderError, type BatchProviderName } from "./provider.js";

const UID = "11111111-2222-3333-4444-555555555555";
const MODELS: Record<BatchProviderName, string> = {
  anthropic: "claude-sonnet-4-6",
  gemini: "gemini-3.1-flash-lite",
  openai: "gpt-5-mini",
};

interface Fake {
  url: string;
  apiKey: string;
  inject(rule: FaultRule): void;
  advance(ms: number): void;
  close(): Promise<void>;
}

const vendors: {
  name: BatchProviderName;
  start: () => Promise<Fake>;
  errorText: (status: number) => string;
}[] = [
  {
    name: "anthropic",
    start: () => startFakeAnthropic(),
    errorText: (s) => (s === 429 ? "rate_limit_error" : "api_error"),
  },
  {
    name: "gemini",
    start: () => startFakeGemini(),
    errorText: (s) => (s === 429 ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE"),
  },
  {
    name: "openai",
    start: () => startFakeOpenAI(),
    errorText: (s) => (s === 429 ? "rate_limit_exceeded" : "server_error"),
  },
];

describe.each(vendors)("$name poll errors", ({ name, start, errorText }) => {
  let fake: Fake;
  let provider: BatchProvider;
  let batchId: string;
  const ctx = () => ({ agentUid: UID, model: MODELS[name], apiKey: fake.apiKey });

  beforeAll(async () => {
    fake = await start();
    provider = providerFor(name, { baseUrl: fake.url, timeoutMs: 300 });
    ({ batchId } = await provider.submit({
      agentUid: UID,
      model: MODELS[name],
      prompt: "hi",
      maxTokens: 100,
      apiKey: fake.apiKey,
    }));
  });
  afterAll(() => fake.close());

  it.each([
    { status: 503, retryAfter: undefined },
    { status: 429, retryAfter: 7 },
  ])("HTTP $status → BatchProviderError with status and retry-after", async ({ status, retryAfter }) => {
    fake.inject({ kind: "status", status, method: "GET", retryAfter });
    const err = await provider.poll(batchId, ctx()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatchProviderError);
    expect(err).toMatchObject({ status, retryAfterSeconds: retryAfter });
    expect((err as Error).message).toContain(`HTTP ${status}: ${errorText(status)}`);
  });

  it("malformed body → BatchProviderError", async () => {
    fake.inject({ kind: "malformed", method: "GET" });
    await expect(provider.poll(batchId, ctx())).rejects.toThrow(/response is not JSON/);
  });

  it("a JSON body of the wrong shape → BatchProviderError", async () => {
    fake.inject({ kind: "malformed", method: "GET", body: "[1,2,3]" });
    await expect(provider.poll(batchId, ctx())).rejects.toThrow(BatchProviderError);
  });

  it("no answer within the timeout → BatchProviderError", async () => {
    fake.inject({ kind: "hang", method: "GET" });
    await expect(provider.poll(batchId, ctx())).rejects.toThrow(/timed out after 300 ms/);
  });

  it("a wrong key → BatchProviderError with the provider's status", async () => {
    const err = await provider.poll(batchId, { ...ctx(), apiKey: "wrong" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatchProviderError);
    expect((err as BatchProviderError).status).toBeGreaterThanOrEqual(400);
  });

  it("an error while reading the result (after the batch ended) → BatchProviderError, then a retry succeeds", async () => {
    fake.advance(25 * 3600_000 * 2);
    // The second request of an ended poll reads the results (Anthropic results_url, OpenAI file
    // content); Gemini has them inline, so its first GET fails instead.
    const resultPath = name === "anthropic" ? /\/results$/ : name === "openai" ? /\/content$/ : /batches/;
    fake.inject({ kind: "status", status: 500, path: resultPath });
    await expect(provider.poll(batchId, ctx())).rejects.toThrow(BatchProviderError);
    await expect(provider.poll(batchId, ctx())).resolves.toMatchObject({
      state: "ended",
      outcome: "succeeded",
    });
  });
});

describe("unreachable provider", () => {
  it("a refused connection → BatchProviderError without a status", async () => {
    const fake = await startFakeAnthropic();
    const url = fake.url;
    await fake.close();
    const provider = providerFor("anthropic", { baseUrl: url, timeoutMs: 2_000 });
    const err = await provider
      .poll("msgbatch_x", { agentUid: UID, model: "m", apiKey: "k" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatchProviderError);
    expect((err as BatchProviderError).status).toBeUndefined();
    expect((err as Error).message).toMatch(
      /^anthropic GET \/v1\/messages\/batches\/msgbatch_x: request failed/,
    );
  });
});
