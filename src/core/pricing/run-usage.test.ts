import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_PRICES, batchCostUsd } from "../../batch/pricing.js";
import { estimateCostUsd, formatUsd, NO_TOKENS, parseUsd } from "./estimate.js";
import { MODEL_PRICES, priceFor } from "./prices.js";
import { type RunUsageInput, runUsage } from "./run-usage.js";
import { vendorCeilingRates } from "./vendor-ceiling.js";

const M = 1_000_000;
/** Lines the real CLIs printed, captured by their helpers (test/fakes/models/fixtures/). */
const FIXTURES = join(import.meta.dirname, "../../../test/fakes/models/fixtures");
const j = (o: unknown) => JSON.stringify(o);
const usage = (inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheWriteTokens = 0) => ({
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens,
});

const claudeResult = (o: {
  cost?: number;
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  modelTokens?: number;
  model?: string;
}) =>
  j({
    type: "result",
    subtype: "success",
    is_error: false,
    ...(o.cost !== undefined ? { total_cost_usd: o.cost } : {}),
    usage: {
      input_tokens: o.input,
      output_tokens: o.output,
      cache_read_input_tokens: o.cacheRead ?? 0,
      cache_creation_input_tokens: o.cacheWrite ?? 0,
    },
    ...(o.modelTokens !== undefined
      ? {
          modelUsage: {
            [o.model ?? "claude-sonnet-4-6"]: {
              inputTokens: o.modelTokens,
              outputTokens: 0,
              costUSD: o.cost,
            },
          },
        }
      : {}),
  });

const codexTurn = (input: number, cached: number, output: number) =>
  j({
    type: "turn.completed",
    usage: { input_tokens: input, cached_input_tokens: cached, output_tokens: output },
  });

const run = (
  vendor: RunUsageInput["vendor"],
  execution: RunUsageInput["execution"],
  model: string,
  lines: string[],
) => runUsage({ vendor, execution, model, lines: lines.join("\n") });

describe("the price table", () => {
  it("agrees with the batch seed's Anthropic input and output rates for every model both list", () => {
    for (const [model, seed] of Object.entries(ANTHROPIC_PRICES)) {
      const ours = MODEL_PRICES[model];
      expect(ours, model).toBeDefined();
      // The seed's table is in cents per million tokens.
      expect(ours?.rates.input, model).toBeCloseTo(seed.standard.input / 100, 10);
      expect(ours?.rates.output, model).toBeCloseTo(seed.standard.output / 100, 10);
    }
  });

  it("names a source and a date for every model", () => {
    for (const [model, price] of Object.entries(MODEL_PRICES)) {
      expect(price.source, model).not.toBe("");
      expect(price.asOf, model).toMatch(/^\d{4}-\d{2}(-\d{2})?$/);
    }
  });

  it.each([
    ["claude-sonnet-4-6", "claude-sonnet-4-6"],
    ["anthropic/claude-sonnet-4-6", "claude-sonnet-4-6"],
    ["claude-haiku-4-5-20251001", "claude-haiku-4-5"],
    ["gemini-2.5-flash-001", "gemini-2.5-flash"],
  ])("prices %s as %s", (id, as) => {
    expect(priceFor(id)).toBe(MODEL_PRICES[as]);
  });

  it.each(["gemini-3.1-flash-lite", "gpt-9", "Claude-Sonnet-4-6", ""])("has no price for %j", (id) => {
    expect(priceFor(id)).toBeUndefined();
  });

  it.each([
    // model, usage, batch, USD
    ["claude-sonnet-4-6", usage(M, 0), false, 3],
    ["claude-sonnet-4-6", usage(0, M), false, 15],
    ["claude-sonnet-4-6", usage(0, 0, M, 0), false, 0.3],
    ["claude-sonnet-4-6", usage(0, 0, 0, M), false, 3.75],
    ["claude-sonnet-4-6", usage(M, M), true, 9],
    ["gpt-5-mini", usage(M, M, M), false, 0.25 + 2 + 0.025],
    ["gpt-5-codex", usage(M, M), true, 5.625],
    ["gemini-2.5-pro", usage(100_000, 1000), false, 0.125 + 0.01],
    // Above 200,000 prompt tokens every token of the request is at the long-prompt rate.
    ["gemini-2.5-pro", usage(200_001, 1000), false, (200_001 * 2.5 + 1000 * 15) / M],
    // Haiku 5.5's tier counts input + cache reads + cache writes.
    ["claude-haiku-5-5", usage(60_000, 0, 50_000, 0), false, (60_000 * 0.5 + 50_000 * 0.05) / M],
    ["claude-haiku-5-5", usage(60_000, 0, 40_000, 0), false, (60_000 * 0.1 + 40_000 * 0.01) / M],
  ])("estimates %s %j (batch %s) at $%d", (model, u, batch, usd) => {
    expect(estimateCostUsd(model, u, batch)).toBeCloseTo(usd, 9);
  });

  it("prices an Anthropic batch's input and output as the seed does when no cache tokens are used", () => {
    const tokens = { input_tokens: 48, output_tokens: 75 };
    expect(estimateCostUsd("claude-sonnet-4-6", usage(48, 75), true)).toBeCloseTo(
      batchCostUsd("claude-sonnet-4-6", tokens),
      12,
    );
  });
});

describe("formatUsd / parseUsd", () => {
  it.each([
    [0, "0"],
    [0.0106, "0.0106"],
    [12, "12"],
    [1.5, "1.5"],
    [0.0000004, "0"],
    [0.0000005, "0.000001"],
    [0.1 + 0.2, "0.3"],
    [-1, "0"],
  ])("%d → %s", (usd, text) => {
    expect(formatUsd(usd)).toBe(text);
  });

  it.each([
    ["0.0106", 0.0106],
    ["12", 12],
    ["-1", 0],
    ["abc", 0],
    [undefined, 0],
    [0.5, 0.5],
  ])("parses %j as %d", (text, usd) => {
    expect(parseUsd(text)).toBe(usd);
  });
});

describe("runUsage on lines the real CLIs printed", () => {
  const fixture = (path: string) => readFileSync(join(FIXTURES, path), "utf8").split("\n");

  it("codex: a realtime session's two turns (exec, then exec resume of the same thread) counted once each", () => {
    const r = run("codex", "realtime", "gpt-5-codex", [
      ...fixture("codex/resume-first.ndjson"),
      ...fixture("codex/resume-second.ndjson"),
    ]);
    // 100 in (40 cached) / 7 out, then the thread's totals 300 (190 cached) / 16: the second turn's own is 200 (150) / 9.
    expect(r?.usage).toEqual(usage(110, 16, 190, 0));
    expect(r?.costSource).toBe("estimated");
  });

  it("gemini: the result's stats, priced per model", () => {
    const r = run("gemini", "interactive", "gemini-2.5-pro", fixture("gemini/edit-success.ndjson"));
    expect(r?.usage).toEqual(usage(20, 10));
    expect(r?.costUsd).toBeCloseTo((20 * 1.25 + 10 * 10) / M, 12);
  });

  it("opencode: the steps' own costs and tokens", () => {
    const r = run(
      "opencode",
      "interactive",
      "anthropic/claude-sonnet-4-6",
      fixture("opencode/edit-anthropic.jsonl"),
    );
    expect(r?.usage).toEqual(usage(4869, 47));
    expect(r?.costUsd).toBeCloseTo(0.015312, 12);
    expect(r?.costSource).toBe("reported");
  });
});

describe("runUsage", () => {
  it("is undefined when the lines carry no usage", () => {
    expect(
      run("claude", "interactive", "claude-sonnet-4-6", ["not json", j({ type: "assistant" })]),
    ).toBeUndefined();
    expect(
      run("codex", "interactive", "gpt-5", [j({ type: "turn.failed", error: { message: "x" } })]),
    ).toBeUndefined();
  });

  describe("claude", () => {
    it("interactive: the result's usage and its reported total_cost_usd", () => {
      const r = run("claude", "interactive", "claude-sonnet-4-6", [
        j({ type: "system", subtype: "init", model: "claude-sonnet-4-6" }),
        claudeResult({ cost: 0.0106, input: 3, output: 24, cacheRead: 20012, cacheWrite: 7 }),
      ]);
      expect(r).toEqual({ usage: usage(3, 24, 20012, 7), costUsd: 0.0106, costSource: "reported" });
    });

    it("a failed API call still counts its tokens and cost", () => {
      const line = j({
        type: "result",
        subtype: "success",
        is_error: true,
        total_cost_usd: 0,
        usage: { input_tokens: 0, output_tokens: 0 },
      });
      expect(run("claude", "interactive", "claude-sonnet-4-6", [line])).toEqual({
        usage: NO_TOKENS,
        costUsd: 0,
        costSource: "reported",
      });
    });

    it("realtime, session running totals: each turn's own cost once (differences), its own usage summed", () => {
      const r = run("claude", "realtime", "claude-sonnet-4-6", [
        claudeResult({ cost: 0.01, input: 100, output: 10, modelTokens: 110 }),
        claudeResult({ cost: 0.025, input: 200, output: 20, modelTokens: 330 }),
        claudeResult({ cost: 0.03, input: 50, output: 5, modelTokens: 385 }),
      ]);
      expect(r?.usage).toEqual(usage(350, 35));
      expect(r?.costUsd).toBeCloseTo(0.03, 12);
      expect(r?.costSource).toBe("reported");
    });

    it("realtime, per-process figures (each turn's CLI counted from zero): the figures are summed", () => {
      const r = run("claude", "realtime", "claude-sonnet-4-6", [
        claudeResult({ cost: 0.01, input: 100, output: 10, modelTokens: 110 }),
        claudeResult({ cost: 0.025, input: 200, output: 20, modelTokens: 220 }),
      ]);
      expect(r?.costUsd).toBeCloseTo(0.035, 12);
    });

    it("the real CLI's lines (2.1.328): model_usage_since_last_result, per model, reported", () => {
      const text = readFileSync(join(FIXTURES, "claude/edit-and-bash.jsonl"), "utf8");
      const r = run("claude", "interactive", "claude-opus-5-5", text.split("\n"));
      expect(r?.usage).toEqual(usage(10306, 118, 800, 100));
      expect(r?.costUsd).toBeCloseTo(0.044244, 9);
      expect(r?.costSource).toBe("reported");
    });

    it("model_usage_since_last_result wins over running totals, side models included", () => {
      const since = (cost: number, input: number, haiku = 0) =>
        j({
          type: "result",
          total_cost_usd: 99,
          usage: { input_tokens: input, output_tokens: 0 },
          model_usage_since_last_result: {
            "claude-sonnet-4-6": { inputTokens: input, outputTokens: 0, costUSD: cost },
            ...(haiku ? { "claude-haiku-4-5": { inputTokens: haiku, outputTokens: 0, costUSD: 0.001 } } : {}),
          },
        });
      const r = run("claude", "realtime", "claude-sonnet-4-6", [since(0.01, 100, 50), since(0.02, 200)]);
      expect(r?.usage).toEqual(usage(350, 0));
      expect(r?.costUsd).toBeCloseTo(0.031, 12);
    });

    it("a result without total_cost_usd is estimated from its tokens", () => {
      const r = run("exec", "interactive", "claude-sonnet-4-6", [claudeResult({ input: M, output: 0 })]);
      expect(r).toEqual({ usage: usage(M, 0), costUsd: 3, costSource: "estimated" });
    });

    it("a model without a price and no reported cost is priced at claude's highest rates, and named", () => {
      const ceiling = vendorCeilingRates("exec");
      expect(run("exec", "interactive", "my-model", [claudeResult({ input: 10, output: 1 })])).toEqual({
        usage: usage(10, 1),
        costUsd: (10 * ceiling.input + 1 * ceiling.output) / M,
        costSource: "estimated",
        unpricedModels: ["my-model"],
      });
    });

    it("batch: the seed's total_cost_usd stays on the line; the status prices every token at half price", () => {
      const r = run("claude", "batch", "claude-sonnet-4-6", [
        j({ type: "system", subtype: "init", model: "claude-sonnet-4-6" }),
        claudeResult({ cost: 0.0006345, input: 48, output: 75, cacheRead: 1000, modelTokens: 1123 }),
      ]);
      expect(r?.costSource).toBe("estimated");
      expect(r?.costUsd).toBeCloseTo((48 * 3 + 75 * 15 + 1000 * 0.3) / M / 2, 12);
    });
  });

  describe("codex", () => {
    it("interactive: input_tokens less the cached part, estimated from the table", () => {
      const r = run("codex", "interactive", "gpt-5-codex", [
        j({ type: "thread.started", thread_id: "t1" }),
        codexTurn(24763, 24448, 122),
      ]);
      expect(r?.usage).toEqual(usage(315, 122, 24448, 0));
      expect(r?.costSource).toBe("estimated");
      expect(r?.costUsd).toBeCloseTo((315 * 1.25 + 122 * 10 + 24448 * 0.125) / M, 12);
    });

    it("realtime: exec resume reports the thread's running totals, so each turn counts its difference", () => {
      const r = run("codex", "realtime", "gpt-5-mini", [
        j({ type: "thread.started", thread_id: "t1" }),
        codexTurn(100, 0, 7),
        j({ type: "thread.started", thread_id: "t1" }),
        codexTurn(300, 0, 16),
        j({ type: "thread.started", thread_id: "t1" }),
        codexTurn(600, 100, 20),
      ]);
      expect(r?.usage).toEqual(usage(500, 20, 100, 0));
    });

    it("a new thread starts counting afresh", () => {
      const r = run("codex", "realtime", "gpt-5-mini", [
        j({ type: "thread.started", thread_id: "t1" }),
        codexTurn(300, 0, 16),
        j({ type: "thread.started", thread_id: "t2" }),
        codexTurn(400, 0, 9),
      ]);
      expect(r?.usage).toEqual(usage(700, 25));
    });

    it("batch: the OpenAI batch lines at half price", () => {
      const r = run("codex", "batch", "gpt-5-mini", [
        j({ type: "thread.started", thread_id: "uid" }),
        j({ type: "turn.started" }),
        j({
          type: "turn.completed",
          usage: { input_tokens: 48, cached_input_tokens: 0, output_tokens: 75, reasoning_output_tokens: 64 },
        }),
      ]);
      expect(r?.costUsd).toBeCloseTo((48 * 0.25 + 75 * 2) / M / 2, 12);
      expect(r?.costSource).toBe("estimated");
    });

    it("the CLI's own default (no model named) is priced at codex's highest rates, never free", () => {
      const r = run("codex", "interactive", "", [codexTurn(10, 0, 1)]);
      expect(r?.costSource).toBe("estimated");
      expect(r?.unpricedModels).toEqual(["default"]);
      expect(r?.costUsd).toBeGreaterThan(0);
    });
  });

  describe("gemini", () => {
    const result = (models: Record<string, Record<string, number>>) =>
      j({ type: "result", status: "success", stats: { models } });

    it("interactive: per model, thinking tokens (total − input − output) as output", () => {
      const r = run("gemini", "interactive", "gemini-2.5-pro", [
        result({
          "gemini-2.5-pro": {
            total_tokens: 1200,
            input_tokens: 1000,
            output_tokens: 100,
            cached: 400,
            input: 600,
          },
          "gemini-2.5-flash-lite": {
            total_tokens: 60,
            input_tokens: 50,
            output_tokens: 10,
            cached: 0,
            input: 50,
          },
        }),
      ]);
      expect(r?.usage).toEqual(usage(650, 210, 400, 0));
      expect(r?.costSource).toBe("estimated");
      expect(r?.costUsd).toBeCloseTo((600 * 1.25 + 200 * 10 + 400 * 0.125 + 50 * 0.1 + 10 * 0.4) / M, 12);
    });

    it("realtime: each turn's process reports its own stats; they are summed", () => {
      const turn = result({
        "gemini-2.5-flash": {
          total_tokens: 110,
          input_tokens: 100,
          output_tokens: 10,
          cached: 0,
          input: 100,
        },
      });
      expect(run("gemini", "realtime", "gemini-2.5-flash", [turn, turn])?.usage).toEqual(usage(200, 20));
    });

    it("a model without a price (gemini-3.1-flash-lite) is priced at gemini's highest rates, at half for batch", () => {
      const r = run("gemini", "batch", "gemini-3.1-flash-lite", [
        j({ type: "init", session_id: "uid", model: "gemini-3.1-flash-lite" }),
        j({
          type: "result",
          status: "success",
          stats: {
            total_tokens: 61,
            input_tokens: 48,
            output_tokens: 13,
            cached: 0,
            input: 48,
            duration_ms: 0,
            tool_calls: 0,
            models: {
              "gemini-3.1-flash-lite": {
                total_tokens: 61,
                input_tokens: 48,
                output_tokens: 13,
                cached: 0,
                input: 48,
              },
            },
          },
        }),
      ]);
      const ceiling = vendorCeilingRates("gemini");
      expect(r).toEqual({
        usage: usage(48, 13),
        costUsd: ((48 * ceiling.input + 13 * ceiling.output) / M) * 0.5,
        costSource: "estimated",
        unpricedModels: ["gemini-3.1-flash-lite"],
      });
    });

    it("batch on a priced model: half price", () => {
      const r = run("gemini", "batch", "gemini-2.5-flash", [
        result({
          "gemini-2.5-flash": { total_tokens: 2 * M, input_tokens: M, output_tokens: M, cached: 0, input: M },
        }),
      ]);
      expect(r?.costUsd).toBeCloseTo((0.3 + 2.5) / 2, 9);
    });
  });

  describe("opencode", () => {
    const step = (cost: number, input: number, output: number, reason = "stop") =>
      j({
        type: "step_finish",
        sessionID: "ses_1",
        part: {
          reason,
          type: "step-finish",
          tokens: { input, output, reasoning: 0, cache: { read: 0, write: 0 } },
          cost,
        },
      });

    it("interactive: the steps' own costs and tokens, summed, reported", () => {
      const r = run("opencode", "interactive", "opencode/anthropic/claude-sonnet-4-6", [
        step(0.007743, 2391, 38, "tool-calls"),
        step(0.007569, 2440, 9),
      ]);
      expect(r?.usage).toEqual(usage(4831, 47));
      expect(r?.costUsd).toBeCloseTo(0.015312, 12);
      expect(r?.costSource).toBe("reported");
    });

    it("a step priced 0 by its catalog (a declared model it does not know) is estimated", () => {
      const r = run("opencode", "interactive", "anthropic/claude-sonnet-4-6", [step(0, M, 0)]);
      expect(r).toEqual({ usage: usage(M, 0), costUsd: 3, costSource: "estimated" });
    });

    it("and at the whole table's highest rates when the table does not know it either", () => {
      const r = run("opencode", "interactive", "openai/my-model", [step(0, 5, 5)]);
      expect(r?.costSource).toBe("estimated");
      expect(r?.unpricedModels).toEqual(["openai/my-model"]);
    });
  });
});
