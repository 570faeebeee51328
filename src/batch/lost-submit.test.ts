/**
 * A submit whose answer was lost (docs/batch-runs.md#a-submit-whose-answer-was-lost), per vendor
 * against its fake: the create takes effect and its answer is lost, the error says the provider
 * may have acted, and findLostSubmit finds that very batch, so nothing is sent twice.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { FakeClock, type FaultRule } from "../../test/fakes/providers/base.js";
import { startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { AnthropicBatchProvider } from "./anthropic.js";
import { GeminiBatchProvider } from "./gemini.js";
import { OpenAIBatchProvider } from "./openai.js";
import { type BatchProvider, BatchProviderError, type BatchSubmitRequest } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
const OTHER_UID = "9b1d4c2e-0000-4000-8000-000000000002";

interface Vendor {
  name: string;
  model: string;
  /** The create request a lost answer is injected on. */
  create: FaultRule;
  start(clock: FakeClock): Promise<{
    provider: BatchProvider;
    apiKey: string;
    inject(rule: FaultRule): void;
    /** Live batches at the provider. */
    batchIds(): string[];
    finish(batchId: string): void;
    close(): Promise<void>;
  }>;
}

const vendors: Vendor[] = [
  {
    name: "anthropic",
    model: "claude-sonnet-4-5",
    create: { kind: "lose-answer", method: "POST", path: "/v1/messages/batches" },
    async start(clock) {
      const fake = await startFakeAnthropic({ clock });
      return {
        provider: new AnthropicBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 }),
        apiKey: fake.apiKey,
        inject: fake.inject,
        batchIds: () => [...fake.batches.values()].filter((b) => !b.deleted).map((b) => b.id),
        finish: fake.finish,
        close: fake.close,
      };
    },
  },
  {
    name: "gemini",
    model: "gemini-3.1-flash-lite",
    create: { kind: "lose-answer", method: "POST", path: /:batchGenerateContent$/ },
    async start(clock) {
      const fake = await startFakeGemini({ clock });
      return {
        provider: new GeminiBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 }),
        apiKey: fake.apiKey,
        inject: fake.inject,
        batchIds: () => [...fake.batches.values()].filter((b) => !b.deleted).map((b) => b.id),
        finish: fake.finish,
        close: fake.close,
      };
    },
  },
  {
    name: "openai",
    model: "gpt-5-mini",
    create: { kind: "lose-answer", method: "POST", path: "/v1/batches" },
    async start(clock) {
      const fake = await startFakeOpenAI({ clock });
      return {
        provider: new OpenAIBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 }),
        apiKey: fake.apiKey,
        inject: fake.inject,
        batchIds: () => [...fake.batches.keys()],
        finish: fake.finish,
        close: fake.close,
      };
    },
  },
];

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const request = (v: Vendor, apiKey: string, agentUid = UID): BatchSubmitRequest => ({
  agentUid,
  model: v.model,
  prompt: "Classify this support ticket",
  maxTokens: 16000,
  apiKey,
});

async function submitError(p: Promise<unknown>): Promise<BatchProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BatchProviderError);
  return err as BatchProviderError;
}

describe.each(vendors)("$name: a submit whose answer was lost", (v) => {
  async function setup() {
    // The fakes stamp batches with their clock; the controller's window is its own: the same here.
    const clock = new FakeClock(Date.now());
    const env = await v.start(clock);
    close = env.close;
    return env;
  }

  it("created its batch: the error says so, and the search finds that one batch", async () => {
    const env = await setup();
    const since = Date.now();
    env.inject(v.create);
    const err = await submitError(env.provider.submit(request(v, env.apiKey)));
    expect(err.mayHaveActed).toBe(true);
    expect(env.batchIds()).toHaveLength(1);
    const batchId = env.batchIds()[0] as string;
    const q = { agentUid: UID, apiKey: env.apiKey, since, until: Date.now() };
    if (v.name === "anthropic") {
      // Listed without its request: whose it is shows only in the results, once it has ended.
      expect((await env.provider.findLostSubmit(q)).state).toBe("undecided");
      env.finish(batchId);
    }
    expect(await env.provider.findLostSubmit(q)).toEqual({ state: "found", batchId });
    expect(env.batchIds()).toEqual([batchId]);
  });

  it("refused before acting (503): not ambiguous, and the search finds nothing", async () => {
    const env = await setup();
    const since = Date.now();
    env.inject({ ...v.create, kind: "status", status: 503 });
    const err = await submitError(env.provider.submit(request(v, env.apiKey)));
    expect(err.mayHaveActed).toBe(false);
    expect(
      (await env.provider.findLostSubmit({ agentUid: UID, apiKey: env.apiKey, since, until: Date.now() }))
        .state,
    ).toBe("none");
  });

  it("another Agent's batch in the same window is not taken for this Agent's", async () => {
    const env = await setup();
    const since = Date.now();
    const { batchId } = await env.provider.submit(request(v, env.apiKey, OTHER_UID));
    env.finish(batchId);
    expect(
      await env.provider.findLostSubmit({ agentUid: UID, apiKey: env.apiKey, since, until: Date.now() }),
    ).toEqual({
      state: "none",
    });
  });
});

describe("openai: an upload whose answer was lost", () => {
  it("is reused by the resend, so the Agent keeps one input file", async () => {
    const fake = await startFakeOpenAI({ clock: new FakeClock(Date.now()) });
    close = fake.close;
    const provider = new OpenAIBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
    const since = Date.now();
    fake.inject({ kind: "lose-answer", method: "POST", path: "/v1/files" });
    const v = vendors[2] as Vendor;
    const err = await submitError(provider.submit(request(v, fake.apiKey)));
    expect(err.mayHaveActed).toBe(true);
    const lost = await provider.findLostSubmit({
      agentUid: UID,
      apiKey: fake.apiKey,
      since,
      until: Date.now(),
    });
    const uploaded = [...fake.files.values()].filter((f) => !f.deleted);
    expect(uploaded).toHaveLength(1);
    expect(lost).toEqual({ state: "none", inputFileId: uploaded[0]?.id });
    const { batchId } = await provider.submit({ ...request(v, fake.apiKey), inputFileId: uploaded[0]?.id });
    expect(fake.batches.get(batchId)?.inputFileId).toBe(uploaded[0]?.id);
    expect([...fake.files.values()].filter((f) => !f.deleted && f.purpose === "batch")).toHaveLength(1);
  });
});
