/**
 * A budgeted Station running the real codex and gemini CLIs on their own default models (the
 * recipe's model names only the CLI: docs/decisions.md D-19), against the local model servers:
 * codex asks for its default (`gpt-6.1-sol`, which no price table lists), gemini first calls its
 * routing classifier on `gemini-3.5-flash-lite`, then the model it picked. Each run is counted in
 * the Station's spend, never $0 (docs/cost-and-budgets.md#no-run-is-free), and the next run is held
 * by the budget.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, Station } from "../../../src/core/types.js";
import { STATIONS } from "../../../src/kube/resources.js";
import { startGeminiServer } from "../../fakes/models/gemini-generate.js";
import { startOpenAiResponsesServer } from "../../fakes/models/openai-responses.js";
import { podReachableHost } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  createAgent,
  createDefinition,
  createRealCliStation,
  finishedAgent,
  keySecret,
  type RealCliEnv,
  realClisSkipReason,
  startRealCliEnv,
} from "./setup.js";

const SKIP = realClisSkipReason();
const RUN_TIMEOUT_MS = 420_000;
const USAGE = { input: 200_000, output: 20_000 };

let env: RealCliEnv;
let gemini: Awaited<ReturnType<typeof startGeminiServer>>;

beforeAll(async () => {
  if (SKIP) return;
  // Run pods on the real node reach this machine on the node's bridge.
  const openai = await startOpenAiResponsesServer({ host: podReachableHost() });
  gemini = await startGeminiServer(podReachableHost());
  openai.fallback({ text: "Done.", usage: USAGE });
  gemini.fallback({ text: "Done.", usage: USAGE });
  env = await startRealCliEnv({
    prefix: "real-defaults",
    model: openai,
    baseUrls: { openai: openai.url, gemini: gemini.origin },
  });
});

afterAll(async () => {
  await env?.close();
  await gemini?.close();
});

async function budgetedStation(name: string, model: string, api: "openai" | "gemini") {
  await createDefinition(env, name, { model, resources: { secrets: [keySecret(api)] } });
  await createRealCliStation(env, name, name, {
    spec: { deadlineMinutes: 8, budget: { limitUSD: 0.05, window: "1h" } },
  });
}

const spendOf = async (station: string) =>
  (await env.client.get<Station>(STATIONS, env.ns, station))?.status?.spend ?? [];

async function heldByBudget(name: string): Promise<Agent> {
  return eventually(
    `${name} held by the budget`,
    async () => {
      const a = await env.client.get<Agent>(
        { group: "agents.re-cinq.com", version: "v1beta1", plural: "agents" },
        env.ns,
        name,
      );
      const ready = a?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.reason === "BudgetExhausted" ? a : undefined;
    },
    120_000,
  );
}

describe.skipIf(SKIP)("a budgeted Station on the CLIs' default models", () => {
  it.concurrent(
    "codex on its default: the run is counted at OpenAI's highest rates and the next run is held",
    async () => {
      await budgetedStation("cx-default", "codex", "openai");
      await createAgent(env, "cx-1", "cx-default", { parameters: { topic: "notes" } });
      const done = await finishedAgent(env, "cx-1", RUN_TIMEOUT_MS);
      expect(done.status?.phase).toBe("Succeeded");
      // codex asked for its own default model: no --model went to the CLI.
      const asked = env.model.modelCalls().map((c) => (c.body as { model?: string }).model);
      expect(asked.length).toBeGreaterThan(0);
      expect(new Set(asked)).toEqual(new Set(["gpt-6.1-sol"]));
      expect(done.status?.costSource).toBe("estimated");
      expect(done.status?.unpricedModels).toEqual(["default"]);
      expect(Number(done.status?.costUSD)).toBeGreaterThan(0.05);
      expect((await spendOf("cx-default")).map((s) => s.costUSD)).toEqual([done.status?.costUSD]);
      await createAgent(env, "cx-2", "cx-default", { parameters: { topic: "notes" } });
      const held = await heldByBudget("cx-2");
      expect(held.status?.phase ?? "Pending").toBe("Pending");
    },
    RUN_TIMEOUT_MS + 180_000,
  );

  it.concurrent(
    "gemini on its default: the classifier and the picked model are both counted and the next run is held",
    async () => {
      await budgetedStation("gm-default", "gemini", "gemini");
      await createAgent(env, "gm-1", "gm-default", { parameters: { topic: "notes" } });
      const done = await finishedAgent(env, "gm-1", RUN_TIMEOUT_MS);
      expect(done.status?.phase).toBe("Succeeded");
      // The routing classifier first, then the model it picked (the fake answers as Google does).
      const paths = gemini
        .journal()
        .map((c) => c.path)
        .filter((p) => p.startsWith("/v1beta/models/"));
      expect(paths[0]).toBe("/v1beta/models/gemini-3.5-flash-lite:generateContent");
      expect(paths.slice(1)).toContain("/v1beta/models/gemini-3.8-flash:streamGenerateContent");
      // Both models priced from the table (3.8-flash at its rate on the run's date), none unpriced.
      expect(done.status?.costSource).toBe("estimated");
      expect(done.status?.unpricedModels).toBeUndefined();
      expect(Number(done.status?.costUSD)).toBeGreaterThan(0.05);
      expect((await spendOf("gm-default")).map((s) => s.costUSD)).toEqual([done.status?.costUSD]);
      await createAgent(env, "gm-2", "gm-default", { parameters: { topic: "notes" } });
      const held = await heldByBudget("gm-2");
      expect(held.status?.phase ?? "Pending").toBe("Pending");
    },
    RUN_TIMEOUT_MS + 180_000,
  );
});
