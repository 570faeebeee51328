/**
 * The batch failure paths, end to end on the local plane: a refused submit fails the Agent with
 * the provider's message (docs/decisions.md D-101), a transient one waits and retries without a
 * second OpenAI upload (D-101), a timeout's cancel is retried until the provider confirms it
 * (D-102, Gemini: cancel before delete), a delete whose cancel keeps failing releases the
 * finalizer after 5 counted attempts (D-103), and a run whose AgentDefinition was deleted still
 * times out by its own deadline and cancels its batch (D-104).
 *
 * One controller, one fake per vendor. The controller's clock moves with env.skip; the fakes'
 * with advance. Tests run in order and each leaves no batch in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_DEFINITIONS, AGENTS, SECRETS } from "../../../src/kube/resources.js";
import { type FakeAnthropic, startFakeAnthropic } from "../../fakes/providers/anthropic.js";
import { FakeClock } from "../../fakes/providers/base.js";
import { type FakeGemini, startFakeGemini } from "../../fakes/providers/gemini.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../fakes/providers/openai.js";
import { eventually } from "../../harness/context.js";
import {
  type BatchEnv,
  createAgent,
  createBatchDefinition,
  createStation,
  expectMetric,
  getAgent,
  hasFinalizer,
  metricValue,
  startBatchEnv,
  waitAgent,
  waitGone,
  waitRunningBatch,
  waitTerminal,
} from "./setup.js";

let anthropic: FakeAnthropic;
let gemini: FakeGemini;
let openai: FakeOpenAI;
let env: BatchEnv;
const HISTORY = { successfulRunsHistoryLimit: 20, failedRunsHistoryLimit: 20 };
const CLEANUP_SPACING_MS = 16_000;
const PAST_TIMEOUT_MS = 6 * 60_000;
const CLAUDE = { model: "claude-sonnet-4-6", keyName: "ANTHROPIC_API_KEY", keyRef: "anthropic-key" };

beforeAll(async () => {
  const clock = new FakeClock();
  anthropic = await startFakeAnthropic({ apiKey: `sk-ant-fail-${Date.now()}`, clock });
  gemini = await startFakeGemini({ apiKey: `gm-fail-${Date.now()}`, clock });
  openai = await startFakeOpenAI({ apiKey: `sk-oai-fail-${Date.now()}`, clock });
  env = await startBatchEnv("batch-fail", {
    baseUrls: { anthropic: anthropic.url, gemini: gemini.url, openai: openai.url },
    secrets: {
      "anthropic-key": anthropic.apiKey,
      "anthropic-key-revoked": anthropic.apiKey,
      "anthropic-wrong": "sk-ant-not-a-key",
      "gemini-key": gemini.apiKey,
      "openai-key": openai.apiKey,
    },
  });
});

afterAll(async () => {
  await env?.close();
  await Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]);
});

async function station(name: string, def: Parameters<typeof createBatchDefinition>[2]) {
  await createBatchDefinition(env, name, { ...def, sinks: false });
  await createStation(env, name, name, HISTORY);
}

const posts = (fake: { requests: { method: string; path: string }[] }, path: RegExp) =>
  fake.requests.filter((r) => r.method === "POST" && path.test(r.path));

describe("a refused submit fails the Agent, quoting the provider", () => {
  it.each([
    {
      name: "bad-key",
      def: { ...CLAUDE, keyRef: "anthropic-wrong" },
      reason:
        "batch submit failed: anthropic POST /v1/messages/batches: HTTP 401: authentication_error: invalid x-api-key",
    },
    {
      name: "missing-key",
      def: { ...CLAUDE, keyRef: "no-such-key" },
      reason: "batch submit failed: key no-such-key of Secret agent-secrets not found",
    },
    {
      name: "unknown-model",
      def: { model: "gemini-9-ultra", keyName: "GEMINI_API_KEY", keyRef: "gemini-key" },
      reason:
        "batch submit failed: gemini POST /v1beta/models/gemini-9-ultra:batchGenerateContent: HTTP 404: NOT_FOUND: models/gemini-9-ultra is not found for API version v1beta, or is not supported for batchGenerateContent. Call ListModels to see the list of available models and their supported methods.",
    },
  ])("$name", async ({ name, def, reason }) => {
    await station(name, def);
    const failuresBefore = await metricValue(env.metrics, "controller_run_failures_total", {
      kind: "batch_failed",
    });
    await createAgent(env, `${name}-1`, name);
    const done = await waitTerminal(env, `${name}-1`);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 1, failureReason: reason });
    expect(done.status?.batchId ?? "").toBe("");
    await waitAgent(env, `${name}-1`, "finalizer released", (a) => !hasFinalizer(a));
    await expectMetric(
      env.metrics,
      "controller_run_failures_total",
      { kind: "batch_failed" },
      failuresBefore + 1,
    );
  });
});

describe("a transient submit failure waits and retries", () => {
  it("OpenAI: 503 with Retry-After, then 429, then the batch is created over the one upload", async () => {
    await station("oai-retry", { model: "gpt-5-mini", keyName: "OPENAI_API_KEY", keyRef: "openai-key" });
    openai.inject({ kind: "status", status: 503, retryAfter: 1, method: "POST", path: "/v1/batches" });
    openai.inject({ kind: "status", status: 429, method: "POST", path: "/v1/batches" });
    await createAgent(env, "oai-retry-1", "oai-retry");
    // The second failure has no Retry-After: the backoff (15 s doubling, so 30 s for a second
    // attempt) holds the Agent Pending meanwhile.
    await eventually(
      "two refused batch creates",
      () => posts(openai, /^\/v1\/batches$/).length >= 2 || undefined,
    );
    const waiting = await getAgent(env, "oai-retry-1");
    expect(waiting?.status?.phase ?? "Pending").toBe("Pending");
    expect(waiting?.status?.failureReason).toBeUndefined();
    env.skip(31_000);
    const running = await waitRunningBatch(env, "oai-retry-1");
    expect(posts(openai, /^\/v1\/files$/)).toHaveLength(1);
    expect(posts(openai, /^\/v1\/batches$/)).toHaveLength(3);
    const batch = openai.batches.get(running.status?.batchId as string);
    expect([...openai.files.values()].filter((f) => f.purpose === "batch").map((f) => f.id)).toEqual([
      batch?.inputFileId,
    ]);
    expect(running.status?.batchSubmission).toEqual({
      keyRef: "openai-key",
      model: "gpt-5-mini",
      timeoutMinutes: 1440,
      onTimeout: "fail",
    });
    openai.finish(running.status?.batchId as string);
    const done = await waitTerminal(env, "oai-retry-1");
    expect(done.status?.phase).toBe("Succeeded");
    await waitAgent(env, "oai-retry-1", "cleaned up", (a) => !hasFinalizer(a));
    expect(openai.files.get(batch?.inputFileId as string)?.deleted).toBe(true);
  });
});

describe("an Agent deleted while its submit waits for a retry", () => {
  it("OpenAI: takes its upload with it (no batch will ever refer to the file)", async () => {
    const creates = posts(openai, /^\/v1\/batches$/).length;
    openai.inject({ kind: "status", status: 503, method: "POST", path: "/v1/batches" });
    await createAgent(env, "oai-gone-1", "oai-retry");
    await eventually(
      "the refused create",
      () => posts(openai, /^\/v1\/batches$/).length > creates || undefined,
    );
    const upload = [...openai.files.values()].filter((f) => f.purpose === "batch").at(-1);
    expect(upload?.deleted).toBe(false);
    await env.client.delete(AGENTS, env.ns, "oai-gone-1");
    await waitGone(env, "oai-gone-1");
    expect(openai.files.get(upload?.id as string)?.deleted).toBe(true);
    expect(posts(openai, /^\/v1\/batches$/).length).toBe(creates + 1);
  });
});

describe("a timeout's cancel is retried until the provider confirms it", () => {
  it("Anthropic: two failed cancels (the Agent is Failed meanwhile), the third goes through, then cleanup", async () => {
    await station("t-cancel", { ...CLAUDE, batch: { timeoutMinutes: 5, onTimeout: "fail" } });
    await createAgent(env, "t-cancel-1", "t-cancel");
    const running = await waitRunningBatch(env, "t-cancel-1");
    const batchId = running.status?.batchId as string;
    const cancelPath = `/v1/messages/batches/${batchId}/cancel`;
    anthropic.inject({ kind: "status", status: 503, method: "POST", path: cancelPath, times: 2 });
    env.skip(PAST_TIMEOUT_MS);
    const done = await waitTerminal(env, "t-cancel-1");
    expect(done.status).toMatchObject({ phase: "Failed", failureReason: "batch timed out" });
    await eventually(
      "a first cancel",
      () => posts(anthropic, /\/cancel$/).some((r) => r.path === cancelPath) || undefined,
    );
    // Refused: the batch still runs, and it would be billed if nobody asked again.
    expect(anthropic.batches.get(batchId)?.status).toBe("in_progress");
    for (const n of [2, 3]) {
      env.skip(CLEANUP_SPACING_MS);
      await eventually(
        `cancel attempt ${n}`,
        () => posts(anthropic, new RegExp(`${batchId}/cancel$`)).length >= n || undefined,
      );
    }
    await eventually(
      "the batch canceling",
      () => anthropic.batches.get(batchId)?.status === "canceling" || undefined,
    );
    const attempts = (await getAgent(env, "t-cancel-1"))?.status?.batchCleanupAttempts ?? 0;
    expect(attempts).toBe(0);
    anthropic.advance(30_000);
    env.skip(CLEANUP_SPACING_MS);
    await waitAgent(env, "t-cancel-1", "cleaned up", (a) => !hasFinalizer(a));
    expect(anthropic.batches.get(batchId)?.deleted).toBe(true);
  });

  it("Gemini: the cancel fails once, is retried, and the DELETE comes only after it", async () => {
    await station("g-cancel", {
      model: "gemini-3.1-flash-lite",
      keyName: "GEMINI_API_KEY",
      keyRef: "gemini-key",
      batch: { timeoutMinutes: 5, onTimeout: "fail" },
    });
    await createAgent(env, "g-cancel-1", "g-cancel");
    const running = await waitRunningBatch(env, "g-cancel-1");
    const batchId = running.status?.batchId as string;
    gemini.inject({ kind: "status", status: 500, method: "POST", path: `/v1beta/batches/${batchId}:cancel` });
    env.skip(PAST_TIMEOUT_MS);
    await waitTerminal(env, "g-cancel-1");
    await eventually("a refused cancel", () => posts(gemini, /:cancel$/).length >= 1 || undefined);
    expect(gemini.batches.get(batchId)?.deleted).toBe(false);
    env.skip(CLEANUP_SPACING_MS);
    await waitAgent(env, "g-cancel-1", "cleaned up", (a) => !hasFinalizer(a));
    const calls = gemini.requests
      .filter((r) => r.path.startsWith(`/v1beta/batches/${batchId}`) && r.method !== "GET")
      .map((r) => `${r.method} ${r.path.replace(`/v1beta/batches/${batchId}`, "")}`);
    expect(calls).toEqual(["POST :cancel", "POST :cancel", "DELETE "]);
    expect(gemini.batches.get(batchId)?.cancelRequestedAt).toBeDefined();
  });
});

describe("a delete is never stuck", () => {
  it("the key removed from agent-secrets: each failed cancel counts; the finalizer goes after 5", async () => {
    await station("revoked", { ...CLAUDE, keyRef: "anthropic-key-revoked" });
    await createAgent(env, "revoked-1", "revoked");
    const running = await waitRunningBatch(env, "revoked-1");
    const batchId = running.status?.batchId as string;
    const before = await metricValue(env.metrics, "controller_batch_cleanup_failures_total");
    expect(
      await env.client.jsonPatch(SECRETS, env.ns, "agent-secrets", [
        { op: "remove", path: "/data/anthropic-key-revoked" },
      ]),
    ).toBe("ok");
    await env.client.delete(AGENTS, env.ns, "revoked-1");
    for (let n = 1; n <= 4; n++) {
      await waitAgent(
        env,
        "revoked-1",
        `${n} failed attempts`,
        (a) => (a.status?.batchCleanupAttempts ?? 0) >= n,
      );
      env.skip(CLEANUP_SPACING_MS);
    }
    await waitGone(env, "revoked-1");
    await expectMetric(env.metrics, "controller_batch_cleanup_failures_total", {}, before + 5);
    // Left behind at the provider, as the seed says: nothing could reach it without the key.
    expect(anthropic.batches.get(batchId)?.status).toBe("in_progress");
    anthropic.finish(batchId);
  });
});

describe("a batch run outlives its definition", () => {
  it("the AgentDefinition deleted mid-run: the run still times out by its own deadline and cancels", async () => {
    await station("orphan", { ...CLAUDE, batch: { timeoutMinutes: 5, onTimeout: "fail" } });
    await createAgent(env, "orphan-1", "orphan");
    const running = await waitRunningBatch(env, "orphan-1");
    const batchId = running.status?.batchId as string;
    expect(running.status?.batchSubmission).toEqual({
      keyRef: "anthropic-key",
      model: "claude-sonnet-4-6",
      timeoutMinutes: 5,
      onTimeout: "fail",
    });
    await env.client.delete(AGENT_DEFINITIONS, env.ns, "orphan");
    await eventually(
      "the definition gone from the cache",
      () => !env.controller.definitions.cache.get("orphan") || undefined,
    );
    env.skip(PAST_TIMEOUT_MS);
    const done = await waitTerminal(env, "orphan-1");
    expect(done.status).toMatchObject({ phase: "Failed", failureReason: "batch timed out" });
    await eventually(
      "the batch canceling",
      () => anthropic.batches.get(batchId)?.status === "canceling" || undefined,
    );
    anthropic.advance(30_000);
    env.skip(CLEANUP_SPACING_MS);
    await waitAgent(env, "orphan-1", "cleaned up", (a) => !hasFinalizer(a));
    expect(anthropic.batches.get(batchId)?.deleted).toBe(true);
  });
});
