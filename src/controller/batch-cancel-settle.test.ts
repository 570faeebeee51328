/**
 * An OpenAI batch Agent deleted in flight, driven by the core and the executor against the fake
 * OpenAI (cancelling for 10 virtual minutes): the finalizer goes only once the batch settled and its
 * files were deleted, or after 5 counted failures, and a try made while the batch is still settling
 * is never counted (docs/batch-runs.md#timeouts-delete-limits). Time is the fake's virtual clock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../test/fakes/providers/base.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { FinalizerLoop } from "../../test/support/batch-finalizer-loop.js";
import { agent, definition, iso } from "../../test/support/core-builders.js";
import { OpenAIBatchProvider } from "../batch/openai.js";

const FIN = "agents.re-cinq.com/batch-cleanup";
const STEP_MS = 5_000;
const SETTLE_MS = 10 * 60_000;

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A batch submitted 5 minutes ago, still in progress, whose Agent is deleted now. */
async function deletedInFlight() {
  const clock = new FakeClock();
  const f = await startFakeOpenAI({ clock, processingMs: 24 * 3600_000 });
  fake = f;
  const provider = new OpenAIBatchProvider({ baseUrl: f.url, timeoutMs: 5_000 });
  const uid = "uid-run-1";
  const { batchId } = await provider.submit({
    agentUid: uid,
    model: "gpt-5-mini",
    prompt: "Fix T-1.",
    maxTokens: 1000,
    apiKey: f.apiKey,
  });
  const inputFileId = f.batches.get(batchId)?.inputFileId as string;
  const startedAt = clock.nowMs;
  clock.advance(5 * 60_000);
  const loop = new FinalizerLoop({
    agent: agent()
      .finalizers(FIN)
      .status({ phase: "Running", batchId, batchProvider: "openai", startedAt: iso(startedAt) })
      .deleting(clock.nowMs)
      .build(),
    definition: definition()
      .batch({
        model: "gpt-5-mini",
        resources: { secrets: [{ name: "OPENAI_API_KEY", ref: "openai-key" }] },
      })
      .build(),
    provider,
    clock,
    secret: { "openai-key": f.apiKey },
  });
  const deletedAt = clock.nowMs;
  const batch = () => f.batches.get(batchId);
  const inputDeleted = () => f.files.get(inputFileId)?.deleted === true;
  /** Runs the loop every 5 virtual seconds until the finalizer goes or `ms` have passed. */
  const runFor = async (ms: number, each?: (elapsed: number) => void) => {
    const until = clock.nowMs + ms;
    while (!loop.released && clock.nowMs < until) {
      each?.(clock.nowMs - deletedAt);
      await loop.tick();
      clock.advance(STEP_MS);
    }
  };
  return { f, clock, loop, batchId, batch, inputDeleted, deletedAt, runFor };
}

describe("OpenAI: a batch Agent deleted while its cancel is refused", () => {
  it("cancel refused (500) twice then accepted, reads of the cancelling batch failing: released only after its files are deleted", async () => {
    const { f, loop, batchId, batch, inputDeleted, deletedAt, runFor } = await deletedInFlight();
    // The soak's faults: two refused cancels (Retry-After 30 s, so the third, at ~60 s, is
    // accepted), then the cleanup's reads of the cancelling batch failing three times in a row.
    f.inject({ kind: "status", status: 500, retryAfter: 30, method: "POST", path: /\/cancel$/, times: 2 });
    f.inject({ kind: "status", status: 500, method: "GET", path: `/v1/batches/${batchId}`, times: 3 });
    await runFor(2 * SETTLE_MS);

    const cancellingAt = batch()?.cancellingAt as number;
    expect(cancellingAt - deletedAt).toBe(60_000);
    expect(loop.released).toBe(true);
    // Not let go while the batch was cancelling: only once it settled and its input file was deleted.
    expect(loop.releasedAt).toBeGreaterThanOrEqual(cancellingAt + SETTLE_MS);
    expect(batch()?.status).toBe("cancelled");
    expect(inputDeleted()).toBe(true);
    // Only the two refused cancels of the deleted Agent are failures (docs/decisions.md D-103).
    expect(loop.agent.status?.batchCleanupAttempts).toBe(2);
    expect(await loop.cleanupFailures()).toBe(2);
  });
});

describe("OpenAI: nearby variants of the same delete", () => {
  it("a leader change after the accepted cancel: the new leader's re-sent cancel refused (500) is not a failure, the batch is already cancelling", async () => {
    const { f, loop, batch, inputDeleted, runFor } = await deletedInFlight();
    f.inject({ kind: "status", status: 500, retryAfter: 30, method: "POST", path: /\/cancel$/, times: 2 });
    await runFor(70_000);
    const cancellingAt = batch()?.cancellingAt as number;
    expect(cancellingAt).toBeDefined();
    // The new leader has no memory of the confirmation (BatchMemory is in memory only): it owes a
    // cancel again, and the outage refuses its cancels.
    loop.leaderChange();
    f.inject({ kind: "status", status: 500, method: "POST", path: /\/cancel$/, times: 5 });
    await runFor(2 * SETTLE_MS);

    expect(loop.released).toBe(true);
    expect(loop.releasedAt).toBeGreaterThanOrEqual(cancellingAt + SETTLE_MS);
    expect(inputDeleted()).toBe(true);
    expect(loop.agent.status?.batchCleanupAttempts).toBe(2);
  });

  it("the API server failing the agent-secrets read while the batch settles: not a failure", async () => {
    const { loop, batch, inputDeleted, runFor } = await deletedInFlight();
    await runFor(STEP_MS);
    const cancellingAt = batch()?.cancellingAt as number;
    expect(cancellingAt).toBeDefined();
    loop.secretReadFailures = 5;
    await runFor(2 * SETTLE_MS);

    expect(loop.released).toBe(true);
    expect(loop.releasedAt).toBeGreaterThanOrEqual(cancellingAt + SETTLE_MS);
    expect(inputDeleted()).toBe(true);
    expect(loop.agent.status?.batchCleanupAttempts).toBeUndefined();
    expect(await loop.cleanupFailures()).toBe(0);
  });
});
