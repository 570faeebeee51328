import { describe, expect, it } from "vitest";
import { BatchProviderError } from "../batch/provider.js";
import type { Action } from "../core/actions.js";
import type { Agent } from "../core/types.js";
import { KubeApiError } from "../kube/errors.js";
import { Executor } from "./executor.js";
import { RunMemory } from "./memory.js";
import { ControllerMetrics } from "./metrics.js";

const agent: Agent = {
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name: "a", namespace: "ns", uid: "u-a", resourceVersion: "7" },
  spec: { stationRef: "s" },
};
const ref = { namespace: "ns", name: "a", uid: "u-a" };

function setup(over: Record<string, unknown> = {}) {
  const calls: string[] = [];
  const client = {
    async create(_r: unknown, _ns: string, obj: { metadata: { name: string } }) {
      calls.push(`create ${obj.metadata.name}`);
      return { created: true, object: obj };
    },
    async patchStatus(_r: unknown, _ns: string, name: string, rv: string) {
      calls.push(`patch ${name}@${rv}`);
      return "ok";
    },
    async delete(_r: unknown, _ns: string, name: string) {
      calls.push(`delete ${name}`);
      return true;
    },
    async jsonPatch() {
      return "ok";
    },
    async addFinalizer() {
      return "ok";
    },
    async get() {
      return undefined;
    },
    ...over,
  };
  const memory = new RunMemory();
  const metrics = new ControllerMetrics();
  const ex = new Executor({
    client: client as never,
    namespace: "ns",
    memory,
    metrics,
    provider: () => {
      throw new Error("no provider");
    },
    now: () => 1000,
    log: () => {},
  });
  return { ex, calls, memory, metrics };
}

const job = { metadata: { name: "agent-job-a" } };

describe("Executor: recordSpend", () => {
  const spendAction: Action = {
    id: "record-spend",
    type: "recordSpend",
    station: { namespace: "ns", name: "s" },
    entry: { agent: "u-a", completedAt: "1970-01-01T00:00:01Z", costUSD: "0.25" },
    windowMs: 3_600_000,
  };
  const stationAt = (rv: string, spend: unknown[] = []) => ({
    metadata: { name: "s", namespace: "ns", resourceVersion: rv },
    spec: { budget: { limitUSD: 1, window: "1h" } },
    status: { spend },
  });

  it("adds the run's entry to the Station's status.spend, guarded by the Station's resourceVersion", async () => {
    const writes: unknown[] = [];
    const { ex } = setup({
      async get() {
        return stationAt("5", [{ agent: "u-b", completedAt: "1970-01-01T00:00:00Z", costUSD: "0.5" }]);
      },
      async patchStatus(_r: unknown, _ns: string, name: string, rv: string, status: unknown) {
        writes.push({ name, rv, status });
        return "ok";
      },
    });
    const r = await ex.execute(agent, [spendAction]);
    expect(r.succeeded).toEqual(["record-spend"]);
    expect(writes).toEqual([
      {
        name: "s",
        rv: "5",
        status: {
          spend: [
            { agent: "u-b", completedAt: "1970-01-01T00:00:00Z", costUSD: "0.5" },
            { agent: "u-a", completedAt: "1970-01-01T00:00:01Z", costUSD: "0.25" },
          ],
        },
      },
    ]);
  });

  it("re-reads the Station after a conflict, and writes nothing when the entry is already there", async () => {
    const rvs: string[] = [];
    let reads = 0;
    const { ex } = setup({
      async get() {
        reads++;
        return reads === 1
          ? stationAt("5")
          : stationAt("6", [{ agent: "u-a", completedAt: "1970-01-01T00:00:01Z", costUSD: "0.25" }]);
      },
      async patchStatus(_r: unknown, _ns: string, _name: string, rv: string) {
        rvs.push(rv);
        return "conflict";
      },
    });
    const r = await ex.execute(agent, [spendAction]);
    expect(r.succeeded).toEqual(["record-spend"]);
    expect(rvs).toEqual(["5"]);
    expect(reads).toBe(2);
  });
});

describe("Executor", () => {
  it("runs actions in order and records an issued creation", async () => {
    const { ex, calls, memory } = setup();
    const actions: Action[] = [
      { id: "create-job", type: "createJob", agent: ref, job },
      {
        id: "patch-status",
        type: "patchStatus",
        agent: ref,
        resourceVersion: "7",
        status: { phase: "Running" },
        dependsOn: ["create-job"],
      },
    ];
    const r = await ex.execute(agent, actions);
    expect(calls).toEqual(["create agent-job-a", "patch a@7"]);
    expect(r.succeeded).toEqual(["create-job", "patch-status"]);
    expect(memory.issuedFor("s")).toEqual(["a"]);
  });

  it("skips dependants of a conflicted patch, so no metric is recorded for an unwritten transition", async () => {
    const { ex, metrics } = setup({ patchStatus: async () => "conflict" });
    const r = await ex.execute(agent, [
      {
        id: "patch-status",
        type: "patchStatus",
        agent: ref,
        resourceVersion: "7",
        status: { phase: "Succeeded" },
      },
      {
        id: "m",
        type: "recordMetric",
        dependsOn: ["patch-status"],
        metric: { name: "controller_runs_completed_total", labels: { phase: "Succeeded", exit_code: "0" } },
      },
    ]);
    expect(r.failed).toEqual(["patch-status"]);
    expect(r.skipped).toEqual(["m"]);
    expect(await metrics.registry.getSingleMetricAsString("controller_runs_completed_total")).not.toContain(
      "phase=",
    );
  });

  it.each([
    ["ok", undefined],
    ["conflict", "7"],
  ] as const)(
    "a status patch answered %s leaves the refused version to re-read past: %s",
    async (outcome, want) => {
      const { ex, memory } = setup({ patchStatus: async () => outcome });
      await ex.execute(agent, [
        { id: "p", type: "patchStatus", agent: ref, resourceVersion: "7", status: { phase: "Running" } },
      ]);
      expect(memory.conflictedAt("u-a")).toBe(want);
    },
  );

  it("a conflicted finalizer add marks the Agent's version as refused too", async () => {
    const { ex, memory } = setup({ addFinalizer: async () => "conflict" });
    await ex.execute(agent, [
      { id: "f", type: "addFinalizer", agent: ref, finalizer: "agents.re-cinq.com/batch-cleanup" },
    ]);
    expect(memory.conflictedAt("u-a")).toBe("7");
  });

  it.each([
    ["owned by this Agent: adopted", "u-a", true],
    ["owned by another Agent: not adopted", "u-other", false],
  ])("an existing Job %s", async (_n, ownerUid, ok) => {
    const { ex, memory } = setup({
      create: async () => ({
        created: false,
        object: { metadata: { name: "agent-job-a", ownerReferences: [{ controller: true, uid: ownerUid }] } },
      }),
    });
    const r = await ex.execute(agent, [{ id: "create-job", type: "createJob", agent: ref, job }]);
    expect(r.succeeded.includes("create-job")).toBe(ok);
    expect(memory.issuedFor("s").length).toBe(ok ? 1 : 0);
  });

  it("treats a conflicted prune delete as done but a conflicted preempt as failed", async () => {
    const { ex } = setup({ delete: async () => false });
    const r = await ex.execute(agent, [
      { id: "prune", type: "deleteAgent", agent: ref, resourceVersion: "1", reason: "prune" },
      { id: "preempt", type: "deleteAgent", agent: ref, resourceVersion: "1", reason: "preempt" },
    ]);
    expect(r.succeeded).toEqual(["prune"]);
    expect(r.failed).toEqual(["preempt"]);
  });
});

describe("Executor batch actions", () => {
  const apiKey = { secretName: "agent-secrets" as const, secretKey: "anthropic-key" };
  function withProvider(provider: Record<string, unknown>) {
    const memory = new RunMemory();
    const seenKeys: string[] = [];
    const ex = new Executor({
      client: {
        async get() {
          return { data: { "anthropic-key": Buffer.from("sk-test").toString("base64") } };
        },
      } as never,
      namespace: "ns",
      memory,
      metrics: new ControllerMetrics(),
      provider: () =>
        ({
          name: "anthropic",
          ...Object.fromEntries(
            Object.entries(provider).map(([k, fn]) => [
              k,
              async (...args: unknown[]) => {
                seenKeys.push(String((args[0] as { apiKey?: string })?.apiKey ?? args.at(-1)));
                return (fn as (...a: unknown[]) => unknown)(...args);
              },
            ]),
          ),
        }) as never,
      now: () => 5000,
      log: () => {},
    });
    return { ex, memory, seenKeys };
  }

  it("submit stores the batch id, counts the creation and asks for another reconcile", async () => {
    const { ex, memory, seenKeys } = withProvider({ submit: () => ({ batchId: "msgbatch_1" }) });
    const r = await ex.execute(agent, [
      {
        id: "submit",
        type: "submitBatch",
        agent: ref,
        provider: "anthropic",
        apiKey,
        request: { agentUid: "u-a", model: "claude-opus-5-5", prompt: "p", maxTokens: 10 },
      },
    ]);
    expect(r.succeeded).toEqual(["submit"]);
    expect(r.reconcileAgain).toBe(true);
    expect(memory.peekBatch("u-a")?.submitted).toEqual({ batchId: "msgbatch_1", at: 5000 });
    expect(memory.issuedFor("s")).toEqual(["a"]);
    expect(seenKeys).toEqual(["sk-test"]);
  });

  it("a failing poll clears the last result and records the attempt time", async () => {
    const { ex, memory } = withProvider({
      poll: () => {
        throw new Error("503");
      },
    });
    memory.batchFor("u-a").pollResult = { state: "in_progress" };
    const r = await ex.execute(agent, [
      {
        id: "poll",
        type: "pollBatch",
        agent: ref,
        provider: "anthropic",
        batchId: "b",
        apiKey,
        ctx: { agentUid: "u-a", model: "m" },
      },
    ]);
    expect(r.failed).toEqual(["poll"]);
    expect(memory.peekBatch("u-a")).toEqual({ lastPollAt: 5000 });
  });

  it("a failing cleanup is stored as a one-shot failed outcome", async () => {
    const { ex, memory } = withProvider({
      cleanup: () => {
        throw new Error("boom");
      },
    });
    await ex.execute(agent, [
      { id: "cleanup", type: "cleanupBatch", agent: ref, provider: "anthropic", batchId: "b", apiKey },
    ]);
    expect(memory.peekBatch("u-a")).toEqual({
      lastCleanupAt: 5000,
      cleanupResult: { state: "failed", error: "boom" },
    });
  });

  it("a cleanup that failed reading the settling batch keeps it settling and says so", async () => {
    const { ex, memory } = withProvider({
      cleanup: () => {
        const err = new BatchProviderError("HTTP 500", 500);
        err.settleUnseen = true;
        throw err;
      },
    });
    memory.batchFor("u-a").settling = true;
    await ex.execute(agent, [
      { id: "cleanup", type: "cleanupBatch", agent: ref, provider: "anthropic", batchId: "b", apiKey },
    ]);
    expect(memory.peekBatch("u-a")).toEqual({
      lastCleanupAt: 5000,
      settling: true,
      cleanupResult: { state: "failed", error: "HTTP 500", settleUnseen: true },
    });
  });
});

// docs/batch-runs.md#timeouts-delete-limits: a cleanup whose key read fails never reached the provider.
describe("Executor: a settling batch's cleanup that cannot read its key", () => {
  const apiKey = { secretName: "agent-secrets" as const, secretKey: "openai-key" };
  it.each([
    {
      name: "the API server errs (503): still settling, not a failure",
      err: new KubeApiError(503, "ServiceUnavailable", "503"),
      want: { settling: true, settleUnseen: true },
    },
    {
      name: "the Secret is forbidden (403): counts (docs/decisions.md D-103)",
      err: new KubeApiError(403, "Forbidden", "403"),
      want: { settling: undefined, settleUnseen: undefined },
    },
  ])("$name", async ({ err, want }) => {
    const memory = new RunMemory();
    const ex = new Executor({
      client: {
        async get() {
          throw err;
        },
      } as never,
      namespace: "ns",
      memory,
      metrics: new ControllerMetrics(),
      provider: () => ({ name: "openai", cleanup: async () => ({ state: "done" }) }) as never,
      now: () => 5000,
      log: () => {},
    });
    memory.batchFor("u-a").settling = true;
    await ex.execute(agent, [
      { id: "cleanup", type: "cleanupBatch", agent: ref, provider: "openai", batchId: "b", apiKey },
    ]);
    const m = memory.peekBatch("u-a");
    expect(m?.settling).toBe(want.settling);
    expect(m?.cleanupResult).toMatchObject({ state: "failed" });
    expect((m?.cleanupResult as { settleUnseen?: boolean } | undefined)?.settleUnseen).toBe(
      want.settleUnseen,
    );
  });
});

// docs/decisions.md D-101 to D-103: what a failed submit or cancel leaves for the core to decide on.
describe("Executor batch failures", () => {
  const apiKey = { secretName: "agent-secrets" as const, secretKey: "anthropic-key" };
  const submit: Action = {
    id: "submit",
    type: "submitBatch",
    agent: ref,
    provider: "anthropic",
    apiKey,
    request: { agentUid: "u-a", model: "claude-opus-5-5", prompt: "p", maxTokens: 10 },
  };
  const cancel: Action = {
    id: "cancel",
    type: "cancelBatch",
    agent: ref,
    provider: "anthropic",
    batchId: "b",
    apiKey,
  };
  function run(o: { secret?: () => unknown; submit?: () => unknown; cancel?: () => unknown }) {
    const memory = new RunMemory();
    const ex = new Executor({
      client: {
        get: async () =>
          o.secret ? o.secret() : { data: { "anthropic-key": Buffer.from("sk-test").toString("base64") } },
      } as never,
      namespace: "ns",
      memory,
      metrics: new ControllerMetrics(),
      provider: () => ({ name: "anthropic", submit: o.submit, cancel: o.cancel }) as never,
      now: () => 5000,
      log: () => {},
    });
    return { ex, memory };
  }
  const throws = (err: Error) => () => {
    throw err;
  };

  it.each([
    {
      name: "a 401 from the provider is permanent and quoted",
      o: {
        submit: throws(new BatchProviderError("anthropic POST /v1/messages/batches: HTTP 401: bad key", 401)),
      },
      want: { permanent: true, message: "anthropic POST /v1/messages/batches: HTTP 401: bad key" },
    },
    {
      name: "an unknown model (404) is permanent",
      o: {
        submit: throws(new BatchProviderError("gemini: HTTP 404: NOT_FOUND: models/x is not found", 404)),
      },
      want: { permanent: true, message: "gemini: HTTP 404: NOT_FOUND: models/x is not found" },
    },
    {
      name: "a 429 with Retry-After is transient and keeps the wait",
      o: { submit: throws(new BatchProviderError("HTTP 429", 429, 30)) },
      want: { permanent: false, message: "HTTP 429", retryAfterMs: 30_000 },
    },
    {
      name: "a 409 is transient",
      o: { submit: throws(new BatchProviderError("HTTP 409", 409)) },
      want: { permanent: false, message: "HTTP 409" },
    },
    {
      name: "a network failure (no status) is transient",
      o: { submit: throws(new BatchProviderError("request failed: ECONNREFUSED")) },
      want: { permanent: false, message: "request failed: ECONNREFUSED" },
    },
    {
      name: "the key missing from agent-secrets is permanent and named",
      o: { secret: () => ({ data: { other: "eA==" } }), submit: () => ({ batchId: "never" }) },
      want: { permanent: true, message: "key anthropic-key of Secret agent-secrets not found" },
    },
    {
      name: "agent-secrets missing is permanent",
      o: { secret: () => undefined, submit: () => ({ batchId: "never" }) },
      want: { permanent: true, message: "Secret agent-secrets not found" },
    },
    {
      name: "the API server failing to read the Secret (503) is transient",
      o: {
        secret: throws(new KubeApiError(503, "ServiceUnavailable", "GET secrets: 503")),
        submit: () => ({}),
      },
      want: { permanent: false, message: "reading Secret agent-secrets: GET secrets: 503" },
    },
  ])("submit: $name", async ({ o, want }) => {
    const { ex, memory } = run(o);
    const r = await ex.execute(agent, [submit]);
    expect(r.failed).toEqual(["submit"]);
    expect(r.reconcileAgain).toBe(true);
    expect(memory.peekBatch("u-a")?.submitFailure).toEqual({ ...want, at: 5000, attempts: 1 });
    expect(memory.issuedFor("s")).toEqual([]);
  });

  it("counts failed attempts in a row, keeps the OpenAI upload to reuse, and forgets it all on success", async () => {
    const err = new BatchProviderError("openai POST /batches: HTTP 503", 503);
    err.inputFileId = "file-1";
    let outcome: () => unknown = throws(err);
    const { ex, memory } = run({ submit: () => outcome() });
    await ex.execute(agent, [submit]);
    await ex.execute(agent, [submit]);
    expect(memory.peekBatch("u-a")?.submitFailure).toMatchObject({ attempts: 2, inputFileId: "file-1" });
    outcome = () => ({ batchId: "batch_1" });
    await ex.execute(agent, [submit]);
    expect(memory.peekBatch("u-a")?.submitFailure).toBeUndefined();
    expect(memory.peekBatch("u-a")?.submitted).toEqual({ batchId: "batch_1", at: 5000 });
  });

  it("a failed cancel is a one-shot cancel_failed outcome with its Retry-After, and asks for another reconcile", async () => {
    const { ex, memory } = run({ cancel: throws(new BatchProviderError("HTTP 529: overloaded", 529, 20)) });
    const r = await ex.execute(agent, [cancel]);
    expect(r.failed).toEqual(["cancel"]);
    expect(r.reconcileAgain).toBe(true);
    expect(memory.peekBatch("u-a")).toEqual({
      lastCleanupAt: 5000,
      cleanupRetryAfterMs: 20_000,
      cleanupResult: { state: "cancel_failed", error: "HTTP 529: overloaded" },
    });
  });

  it("a cancel whose key was removed from agent-secrets fails the same way", async () => {
    const { ex, memory } = run({ secret: () => ({ data: {} }), cancel: () => undefined });
    await ex.execute(agent, [cancel]);
    expect(memory.peekBatch("u-a")?.cleanupResult).toEqual({
      state: "cancel_failed",
      error: "key anthropic-key of Secret agent-secrets not found",
    });
  });

  it("discardUpload deletes the remembered OpenAI upload and forgets it", async () => {
    const discarded: string[] = [];
    const memory = new RunMemory();
    memory.batchFor("u-a").submitFailure = {
      permanent: false,
      message: "503",
      at: 1,
      attempts: 1,
      inputFileId: "file-1",
    };
    const ex = new Executor({
      client: {
        get: async () => ({ data: { "openai-key": Buffer.from("sk-o").toString("base64") } }),
      } as never,
      namespace: "ns",
      memory,
      metrics: new ControllerMetrics(),
      provider: () =>
        ({
          name: "openai",
          discardUpload: async (id: string, key: string) => void discarded.push(`${id} ${key}`),
        }) as never,
      now: () => 5000,
      log: () => {},
    });
    const r = await ex.execute(agent, [
      {
        id: "discard",
        type: "discardUpload",
        agent: ref,
        provider: "openai",
        fileId: "file-1",
        apiKey: { secretName: "agent-secrets", secretKey: "openai-key" },
      },
    ]);
    expect(r.succeeded).toEqual(["discard"]);
    expect(discarded).toEqual(["file-1 sk-o"]);
    expect(memory.peekBatch("u-a")?.submitFailure?.inputFileId).toBeUndefined();
  });

  it("a confirmed cancel is remembered", async () => {
    const { ex, memory } = run({ cancel: () => undefined });
    const r = await ex.execute(agent, [cancel]);
    expect(r.succeeded).toEqual(["cancel"]);
    // A cancelled batch settles from now on: tries that cannot see it settled are not failures.
    expect(memory.peekBatch("u-a")).toEqual({ cancelledAt: 5000, settling: true });
  });
});
