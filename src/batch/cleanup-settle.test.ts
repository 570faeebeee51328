/**
 * A cleanup that fails reading whether the batch has settled says so (settleUnseen), so a try made
 * while a cancelled batch is still settling is not counted as a failed cleanup
 * (docs/batch-runs.md#timeouts-delete-limits); a failure after it saw the batch settled is a real one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { AnthropicBatchProvider } from "./anthropic.js";
import { OpenAIBatchProvider } from "./openai.js";
import { BatchProviderError } from "./provider.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** The smallest Anthropic batch submit of the Agent UID. */
const anthropicRequest = (apiKey: string) => ({
  agentUid: UID,
  model: "claude-sonnet-4-5",
  prompt: "p",
  maxTokens: 100,
  apiKey,
});

async function cleanupError(p: Promise<unknown>): Promise<BatchProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BatchProviderError);
  return err as BatchProviderError;
}

describe("openai cleanup of a cancelled batch", () => {
  it("a failed read of the batch is settleUnseen; a failed file delete after it settled is not", async () => {
    const fake = await startFakeOpenAI();
    close = fake.close;
    const p = new OpenAIBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
    const req = { agentUid: UID, model: "gpt-5-mini", prompt: "p", maxTokens: 100, apiKey: fake.apiKey };
    const { batchId } = await p.submit(req);
    await p.cancel(batchId, fake.apiKey);
    expect(await p.cleanup(batchId, fake.apiKey)).toEqual({ state: "not_settled" });
    fake.inject({ kind: "status", status: 500, method: "GET", path: `/v1/batches/${batchId}` });
    expect((await cleanupError(p.cleanup(batchId, fake.apiKey))).settleUnseen).toBe(true);
    fake.finish(batchId);
    fake.inject({ kind: "status", status: 500, method: "DELETE", path: /^\/v1\/files\// });
    expect((await cleanupError(p.cleanup(batchId, fake.apiKey))).settleUnseen).toBe(false);
    expect(await p.cleanup(batchId, fake.apiKey)).toEqual({ state: "done" });
  });
});

describe("anthropic cleanup of a cancelled batch", () => {
  it("a failed read of the batch is settleUnseen; a failed delete after it ended is not", async () => {
    const fake = await startFakeAnthropic();
    close = fake.close;
    const p = new AnthropicBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
    const { batchId } = await p.submit(anthropicRequest(fake.apiKey));
    await p.cancel(batchId, fake.apiKey);
    fake.inject({ kind: "status", status: 500, method: "GET", path: `/v1/messages/batches/${batchId}` });
    expect((await cleanupError(p.cleanup(batchId, fake.apiKey))).settleUnseen).toBe(true);
    fake.finish(batchId);
    fake.inject({ kind: "status", status: 500, method: "DELETE", path: `/v1/messages/batches/${batchId}` });
    expect((await cleanupError(p.cleanup(batchId, fake.apiKey))).settleUnseen).toBe(false);
  });
});

/**
 * A cancel that fails is confirmed by reading the batch: one already cancelling (an earlier cancel
 * was accepted, perhaps by a leader that has forgotten it) or ended needs none; one still running,
 * or a read that fails too, keeps the cancel's own error.
 */
describe("a failed cancel confirmed by the batch's state", () => {
  it("openai: refused 500 while cancelling resolves; while in progress, or unreadable, it throws the cancel's error", async () => {
    const fake = await startFakeOpenAI({ processingMs: 3600_000 });
    close = fake.close;
    const p = new OpenAIBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
    const req = { agentUid: UID, model: "gpt-5-mini", prompt: "p", maxTokens: 100, apiKey: fake.apiKey };
    const { batchId } = await p.submit(req);
    const cancel = `/v1/batches/${batchId}/cancel`;
    fake.inject({ kind: "status", status: 500, method: "POST", path: cancel });
    expect((await cleanupError(p.cancel(batchId, fake.apiKey))).status).toBe(500);
    await p.cancel(batchId, fake.apiKey);
    fake.inject({ kind: "status", status: 500, method: "POST", path: cancel });
    fake.inject({ kind: "status", status: 503, method: "GET", path: `/v1/batches/${batchId}` });
    expect((await cleanupError(p.cancel(batchId, fake.apiKey))).status).toBe(500);
    fake.inject({ kind: "status", status: 500, method: "POST", path: cancel });
    await expect(p.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
    expect(fake.batches.get(batchId)?.status).toBe("cancelling");
  });

  it("anthropic: refused 500 while canceling resolves; while in progress it throws the cancel's error", async () => {
    const fake = await startFakeAnthropic({ processingMs: 3600_000 });
    close = fake.close;
    const p = new AnthropicBatchProvider({ baseUrl: fake.url, timeoutMs: 5_000 });
    const { batchId } = await p.submit(anthropicRequest(fake.apiKey));
    const cancel = `/v1/messages/batches/${batchId}/cancel`;
    fake.inject({ kind: "status", status: 500, method: "POST", path: cancel });
    expect((await cleanupError(p.cancel(batchId, fake.apiKey))).status).toBe(500);
    await p.cancel(batchId, fake.apiKey);
    fake.inject({ kind: "status", status: 500, method: "POST", path: cancel });
    await expect(p.cancel(batchId, fake.apiKey)).resolves.toBeUndefined();
    expect(fake.batches.get(batchId)?.status).toBe("canceling");
  });
});
