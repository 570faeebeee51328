/** What the executor tells the provider limits (docs/provider-limits.md): run starts and batch throttles. */
import { describe, expect, it } from "vitest";
import { BatchProviderError } from "../batch/provider.js";
import type { Action } from "../core/actions.js";
import type { Agent } from "../core/types.js";
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
const apiKey = { secretName: "agent-secrets" as const, secretKey: "anthropic-key" };
const submit: Action = {
  id: "submit",
  type: "submitBatch",
  agent: ref,
  provider: "anthropic",
  apiKey,
  request: { agentUid: "u-a", model: "claude-opus-5-5", prompt: "p", maxTokens: 10 },
};

function setup(submitFn: () => unknown, create: () => unknown = () => ({ created: true, object: {} })) {
  const seen: string[] = [];
  const ex = new Executor({
    client: {
      get: async () => ({ data: { "anthropic-key": Buffer.from("sk-test").toString("base64") } }),
      create: async () => create(),
    } as never,
    namespace: "ns",
    memory: new RunMemory(),
    metrics: new ControllerMetrics(),
    provider: () => ({ name: "anthropic", submit: submitFn }) as never,
    now: () => 5000,
    log: () => {},
    onRunStarted: (name) => seen.push(`started ${name}`),
    onBatchThrottled: (name, status, retryAfter) => seen.push(`throttled ${name} ${status} ${retryAfter}`),
  });
  return { ex, seen };
}

describe("Executor: provider limits", () => {
  it("a submitted batch is a run start", async () => {
    const { ex, seen } = setup(() => ({ batchId: "b-1" }));
    await ex.execute(agent, [submit]);
    expect(seen).toEqual(["started a"]);
  });

  it("a created Job is a run start; a failed creation is not", async () => {
    const createJob: Action = {
      id: "create-job",
      type: "createJob",
      agent: ref,
      job: { metadata: { name: "j" } },
    };
    const ok = setup(() => ({}));
    await ok.ex.execute(agent, [createJob]);
    expect(ok.seen).toEqual(["started a"]);
    const failing = setup(
      () => ({}),
      () => {
        throw new Error("boom");
      },
    );
    await failing.ex.execute(agent, [createJob]);
    expect(failing.seen).toEqual([]);
  });

  it.each([
    [new BatchProviderError("HTTP 429", 429, 30), ["throttled a 429 30"]],
    [new BatchProviderError("HTTP 529: overloaded", 529), ["throttled a 529 undefined"]],
    [new BatchProviderError("HTTP 503", 503), []],
    [new BatchProviderError("HTTP 401", 401), []],
    [new Error("ECONNRESET"), []],
  ])("a submit failing with %s tells the throttle only for 429 and 529", async (err, want) => {
    const { ex, seen } = setup(() => {
      throw err;
    });
    await ex.execute(agent, [submit]);
    expect(seen).toEqual(want);
  });
});
