/**
 * An OpenAI batch Agent deleted while its cancel is refused (500 twice, then accepted), whose
 * batch then sits in `cancelling` while every read of it fails: the two refused cancels count as
 * failed cleanups, the tries made while the batch is still settling do not
 * (docs/batch-runs.md#timeouts-delete-limits), so the finalizer is not let go before the batch
 * settled, and then the cleanup deletes its input file and lets the Agent go.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS } from "../../../src/kube/resources.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../fakes/providers/openai.js";
import { eventually } from "../../harness/context.js";
import {
  type BatchEnv,
  createAgent,
  createBatchDefinition,
  createStation,
  getAgent,
  hasFinalizer,
  startBatchEnv,
  waitAgent,
  waitGone,
  waitRunningBatch,
} from "./setup.js";

const CLEANUP_SPACING_MS = 16_000;
const OPENAI_CANCELLING_MS = 10 * 60_000;
let openai: FakeOpenAI;
let env: BatchEnv;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: `sk-oai-settle-${Date.now()}` });
  env = await startBatchEnv("batch-settle", {
    baseUrls: { openai: openai.url },
    secrets: { "openai-key": openai.apiKey },
  });
  await createBatchDefinition(env, "gpt", {
    model: "gpt-5-mini",
    keyName: "OPENAI_API_KEY",
    keyRef: "openai-key",
    sinks: false,
  });
  await createStation(env, "gpt", "gpt", { successfulRunsHistoryLimit: 20, failedRunsHistoryLimit: 20 });
});

afterAll(async () => {
  await env?.close();
  await openai?.close();
});

const requestsTo = (method: string, path: string) =>
  openai.requests.filter((r) => r.method === method && r.path === path).length;

describe("deleted while its cancel is refused, then settling", () => {
  it("counts the refused cancels only, and lets the Agent go once the files are deleted", async () => {
    await createAgent(env, "settle-1", "gpt");
    const running = await waitRunningBatch(env, "settle-1");
    const batchId = running.status?.batchId as string;
    const inputFileId = openai.batches.get(batchId)?.inputFileId as string;
    const cancelPath = `/v1/batches/${batchId}/cancel`;
    const batchPath = `/v1/batches/${batchId}`;
    openai.inject({ kind: "status", status: 500, method: "POST", path: cancelPath, times: 2 });
    await env.client.delete(AGENTS, env.ns, "settle-1");
    for (const n of [1, 2]) {
      await waitAgent(
        env,
        "settle-1",
        `${n} refused cancels counted`,
        (a) => a.status?.batchCleanupAttempts === n,
      );
      env.skip(CLEANUP_SPACING_MS);
    }
    await eventually(
      "the cancel accepted",
      () => openai.batches.get(batchId)?.status === "cancelling" || undefined,
    );
    // From now on every read of the batch fails while it stays cancelling (up to 10 minutes).
    openai.inject({
      kind: "status",
      status: 500,
      method: "GET",
      path: batchPath,
      times: Number.POSITIVE_INFINITY,
    });
    for (let n = 1; n <= 5; n++) {
      const before = requestsTo("GET", batchPath);
      env.skip(CLEANUP_SPACING_MS);
      // Without the rule, the third failed try here is the fifth counted one and the Agent is gone.
      await eventually(
        `settling try ${n}`,
        async () =>
          requestsTo("GET", batchPath) > before ||
          (await getAgent(env, "settle-1")) === undefined ||
          undefined,
      );
      expect(await getAgent(env, "settle-1"), `after settling try ${n}`).toBeDefined();
    }
    const held = await getAgent(env, "settle-1");
    expect(held && hasFinalizer(held)).toBe(true);
    expect(held?.status?.batchCleanupAttempts).toBe(2);
    expect(openai.files.get(inputFileId)?.deleted).toBe(false);

    openai.clearFaults();
    openai.advance(OPENAI_CANCELLING_MS);
    env.skip(CLEANUP_SPACING_MS);
    await waitGone(env, "settle-1");
    expect(openai.files.get(inputFileId)?.deleted).toBe(true);
  });
});
