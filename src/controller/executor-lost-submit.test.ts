/**
 * The batch seed sends one request per Agent. A submit whose request was sent and whose answer was
 * lost is not simply sent again: the next attempt first looks for the batch it may have created
 * (docs/batch-runs.md#a-submit-whose-answer-was-lost). Per vendor, the fake creates the batch and
 * drops the answer; the provider ends up with exactly one batch and the Agent's submit with its id.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { FakeClock, type FaultRule } from "../../test/fakes/providers/base.js";
import { startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import { AnthropicBatchProvider } from "../batch/anthropic.js";
import { GeminiBatchProvider } from "../batch/gemini.js";
import { OpenAIBatchProvider } from "../batch/openai.js";
import type { BatchProvider, BatchProviderName } from "../batch/provider.js";
import type { Action } from "../core/actions.js";
import type { Agent } from "../core/types.js";
import { Executor } from "./executor.js";
import { RunMemory } from "./memory.js";
import { ControllerMetrics } from "./metrics.js";

const UID = "3f6c2a0e-8d1b-4c57-9a0e-2b7f5d9c1e44";
const agent: Agent = {
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name: "a", namespace: "ns", uid: UID, resourceVersion: "7" },
  spec: { stationRef: "s" },
};

interface Fake {
  provider: BatchProvider;
  apiKey: string;
  inject(rule: FaultRule): void;
  batchIds(): string[];
  finish(batchId: string): void;
  close(): Promise<void>;
}

const vendors: {
  name: BatchProviderName;
  model: string;
  lose: FaultRule;
  start(clock: FakeClock): Promise<Fake>;
}[] = [
  {
    name: "anthropic",
    model: "claude-sonnet-4-5",
    lose: { kind: "lose-answer", method: "POST", path: "/v1/messages/batches" },
    start: async (clock) => {
      const f = await startFakeAnthropic({ clock });
      return {
        provider: new AnthropicBatchProvider({ baseUrl: f.url, timeoutMs: 5_000 }),
        apiKey: f.apiKey,
        inject: f.inject,
        batchIds: () => [...f.batches.keys()],
        finish: f.finish,
        close: f.close,
      };
    },
  },
  {
    name: "gemini",
    model: "gemini-3.1-flash-lite",
    lose: { kind: "lose-answer", how: "hang", method: "POST", path: /:batchGenerateContent$/ },
    start: async (clock) => {
      const f = await startFakeGemini({ clock });
      return {
        provider: new GeminiBatchProvider({ baseUrl: f.url, timeoutMs: 1_000 }),
        apiKey: f.apiKey,
        inject: f.inject,
        batchIds: () => [...f.batches.keys()],
        finish: f.finish,
        close: f.close,
      };
    },
  },
  {
    name: "openai",
    model: "gpt-5-mini",
    lose: { kind: "lose-answer", method: "POST", path: "/v1/batches" },
    start: async (clock) => {
      const f = await startFakeOpenAI({ clock });
      return {
        provider: new OpenAIBatchProvider({ baseUrl: f.url, timeoutMs: 5_000 }),
        apiKey: f.apiKey,
        inject: f.inject,
        batchIds: () => [...f.batches.keys()],
        finish: f.finish,
        close: f.close,
      };
    },
  },
];

let fake: Fake | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe.each(vendors)("$name: a submit whose answer was lost", (v) => {
  it("is settled before any resend: one batch at the provider, and the Agent's submit carries its id", async () => {
    const f = await v.start(new FakeClock(Date.now()));
    fake = f;
    const memory = new RunMemory();
    const ex = new Executor({
      client: { get: async () => ({ data: { key: Buffer.from(f.apiKey).toString("base64") } }) } as never,
      namespace: "ns",
      memory,
      metrics: new ControllerMetrics(),
      provider: () => f.provider,
      now: Date.now,
      log: () => {},
    });
    const submit: Action = {
      id: "submit",
      type: "submitBatch",
      agent: { namespace: "ns", name: "a", uid: UID },
      provider: v.name,
      apiKey: { secretName: "agent-secrets", secretKey: "key" },
      request: { agentUid: UID, model: v.model, prompt: "Classify this ticket", maxTokens: 1000 },
    };
    const m = memory.batchFor(UID);
    const attempt = async () => {
      // What the core sends after the back-off (pending.ts): the same submit, with a reused upload.
      const inputFileId = m.submitFailure?.inputFileId;
      const a = {
        ...submit,
        request: { ...submit.request, ...(inputFileId ? { inputFileId } : {}) },
      } as Action;
      return ex.execute(agent, [a]);
    };

    f.inject(v.lose);
    expect((await attempt()).failed).toEqual(["submit"]);
    expect(m.submitFailure).toMatchObject({ permanent: false });
    expect(m.submitFailure?.unansweredSince).toBeTypeOf("number");
    expect(f.batchIds()).toHaveLength(1);
    const created = f.batchIds()[0] as string;

    if (v.name === "anthropic") {
      // Its batches are listed without their requests: the Agent waits until the candidate has ended.
      expect((await attempt()).failed).toEqual(["submit"]);
      expect(m.submitFailure?.message).toContain("not sent again yet");
      f.finish(created);
    }
    expect((await attempt()).succeeded).toEqual(["submit"]);
    expect(m.submitted?.batchId).toBe(created);
    expect(m.submitFailure).toBeUndefined();
    expect(f.batchIds()).toEqual([created]);
  });
});
