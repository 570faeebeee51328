/**
 * A batch submit whose request was sent and whose answer was lost (the fake creates the batch,
 * then resets the connection) is settled before any resend
 * (docs/batch-runs.md#a-submit-whose-answer-was-lost): per vendor, the provider ends up with
 * exactly one batch and the Agent runs with that batch's id. Anthropic lists batches without
 * their requests, so its Agent adopts the batch once the batch has ended and its result names it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../../fakes/providers/anthropic.js";
import { FakeClock, type FaultRule } from "../../fakes/providers/base.js";
import { type FakeGemini, startFakeGemini } from "../../fakes/providers/gemini.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../fakes/providers/openai.js";
import {
  type BatchEnv,
  createAgent,
  createBatchDefinition,
  createStation,
  startBatchEnv,
  waitAgent,
} from "./setup.js";

/** Past the first submit back-off (15 s). */
const PAST_BACKOFF_MS = 16_000;
let anthropic: FakeAnthropic;
let gemini: FakeGemini;
let openai: FakeOpenAI;
let env: BatchEnv;

beforeAll(async () => {
  // The providers stamp batches with their clock, the controller's window is its own: start them together.
  const clock = new FakeClock(Date.now());
  anthropic = await startFakeAnthropic({ apiKey: `sk-ant-lost-${Date.now()}`, clock });
  gemini = await startFakeGemini({ apiKey: `gm-lost-${Date.now()}`, clock });
  openai = await startFakeOpenAI({ apiKey: `sk-oai-lost-${Date.now()}`, clock });
  env = await startBatchEnv("batch-lost", {
    baseUrls: { anthropic: anthropic.url, gemini: gemini.url, openai: openai.url },
    secrets: { "anthropic-key": anthropic.apiKey, "gemini-key": gemini.apiKey, "openai-key": openai.apiKey },
  });
});

afterAll(async () => {
  await env?.close();
  await Promise.all([anthropic?.close(), gemini?.close(), openai?.close()]);
});

const vendors: {
  name: string;
  def: { model: string; keyName: string; keyRef: string };
  create: FaultRule;
  batchIds: () => string[];
  /** Anthropic: the Agent can tell the batch is its own only from its results. */
  end?: (batchId: string) => void;
}[] = [
  {
    name: "anthropic",
    def: { model: "claude-sonnet-4-6", keyName: "ANTHROPIC_API_KEY", keyRef: "anthropic-key" },
    create: { kind: "lose-answer", method: "POST", path: "/v1/messages/batches" },
    batchIds: () => [...(anthropic?.batches.keys() ?? [])],
    end: (id) => anthropic.finish(id),
  },
  {
    name: "gemini",
    def: { model: "gemini-3.1-flash-lite", keyName: "GEMINI_API_KEY", keyRef: "gemini-key" },
    create: { kind: "lose-answer", method: "POST", path: /:batchGenerateContent$/ },
    batchIds: () => [...(gemini?.batches.keys() ?? [])],
  },
  {
    name: "openai",
    def: { model: "gpt-5-mini", keyName: "OPENAI_API_KEY", keyRef: "openai-key" },
    create: { kind: "lose-answer", method: "POST", path: "/v1/batches" },
    batchIds: () => [...(openai?.batches.keys() ?? [])],
  },
];

describe.each(vendors)("$name: the submit's answer is lost after the batch was created", (v) => {
  it("one batch at the provider, and the Agent carries its id", async () => {
    const fake = { anthropic, gemini, openai }[v.name as "anthropic" | "gemini" | "openai"];
    await createBatchDefinition(env, `lost-${v.name}`, { ...v.def, sinks: false });
    await createStation(env, `lost-${v.name}`, `lost-${v.name}`, { successfulRunsHistoryLimit: 20 });
    fake.inject(v.create);
    await createAgent(env, `lost-${v.name}-1`, `lost-${v.name}`);
    await waitAgent(env, `lost-${v.name}-1`, "waiting after the lost answer", (a) =>
      (a.status?.conditions ?? []).some((c) => (c.message ?? "").includes("batch submit failed")),
    );
    expect(v.batchIds()).toHaveLength(1);
    const created = v.batchIds()[0] as string;
    v.end?.(created);
    env.skip(PAST_BACKOFF_MS);
    // Anthropic's adopted batch has already ended: the Agent may pass Running quickly.
    const adopted = await waitAgent(env, `lost-${v.name}-1`, "a batchId", (a) => !!a.status?.batchId);
    expect(adopted.status?.batchId).toBe(created);
    expect(v.batchIds()).toEqual([created]);
  });
});
