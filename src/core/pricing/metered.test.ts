import { describe, expect, it } from "vitest";
import type { ModelUsageSpec } from "../types.js";
import {
  IN_FLIGHT_STALE_MS,
  METERING_WAIT_MS,
  meteredRunUsage,
  meteringState,
  sumMetered,
} from "./metered.js";

const T = Date.parse("2026-12-07T10:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();
const spec = (over: Partial<ModelUsageSpec>): ModelUsageSpec => ({
  agent: { name: "a", uid: "u" },
  vendor: "anthropic",
  calls: 1,
  models: [],
  ...over,
});
const tokens = (model: string, input: number, output: number, extra = {}) => ({
  model,
  inputTokens: input,
  outputTokens: output,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  ...extra,
});

describe("sumMetered: one run's objects, one per gateway process", () => {
  it("adds calls and tokens per model across objects, models sorted", () => {
    const sum = sumMetered([
      spec({
        calls: 2,
        incompleteCalls: 1,
        models: [tokens("m-b", 10, 1), tokens("m-a", 5, 5, { cacheWriteTokens: 4, cacheWrite1hTokens: 4 })],
      }),
      spec({ calls: 3, models: [tokens("m-b", 1, 100)] }),
    ]);
    expect(sum).toEqual({
      calls: 5,
      incompleteCalls: 1,
      models: [
        {
          model: "m-a",
          inputTokens: 5,
          outputTokens: 5,
          cacheReadTokens: 0,
          cacheWriteTokens: 4,
          cacheWrite1hTokens: 4,
        },
        { model: "m-b", inputTokens: 11, outputTokens: 101, cacheReadTokens: 0, cacheWriteTokens: 0 },
      ],
    });
  });
});

describe("meteredRunUsage", () => {
  it("prices each model at its own rates, never at the batch discount", () => {
    // claude-sonnet-4-6 $3/$15, claude-opus-4-5 $5/$25 per million.
    const u = meteredRunUsage(
      {
        calls: 2,
        incompleteCalls: 0,
        models: [tokens("claude-sonnet-4-6", 1_000_000, 0), tokens("claude-opus-4-5", 0, 1_000_000)],
      },
      { vendor: "anthropic", at: T },
    );
    expect(u).toEqual({
      usage: { inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: 28,
      costSource: "metered",
    });
  });

  it("a model without a price is charged its vendor's highest rates and named", () => {
    const u = meteredRunUsage(
      { calls: 1, incompleteCalls: 0, models: [tokens("gpt-unknown", 1_000_000, 0)] },
      { vendor: "openai", at: T },
    );
    expect(u.unpricedModels).toEqual(["gpt-unknown"]);
    expect(u.costUsd).toBeGreaterThan(0);
  });

  it("an installation's price override is used", () => {
    const u = meteredRunUsage(
      { calls: 1, incompleteCalls: 0, models: [tokens("my-model", 1_000_000, 0)] },
      {
        vendor: "anthropic",
        at: T,
        prices: {
          "my-model": {
            source: "test",
            asOf: "2026-12",
            rates: { input: 1, output: 1, cacheRead: 1, cacheWrite: 1 },
          },
        },
      },
    );
    expect(u.costUsd).toBe(1);
    expect(u.unpricedModels).toBeUndefined();
  });
});

describe("meteringState: may a finished run be priced yet", () => {
  const cases: [string, ModelUsageSpec[], number | undefined, ReturnType<typeof meteringState>][] = [
    ["no objects: nothing in flight", [], T, { state: "settled" }],
    ["every call recorded", [spec({ inFlight: 0, updatedAt: iso(T) })], T, { state: "settled" }],
    [
      "a live process still reads a call: wait",
      [spec({ inFlight: 2, updatedAt: iso(T - 1_000) })],
      T,
      { state: "wait", calls: 2 },
    ],
    [
      "a process that stopped writing long ago is gone: price without its calls",
      [spec({ inFlight: 1, updatedAt: iso(T - IN_FLIGHT_STALE_MS) })],
      T,
      { state: "unsettled", calls: 1 },
    ],
    [
      "the wait is over: price without them",
      [spec({ inFlight: 1, updatedAt: iso(T) })],
      T - METERING_WAIT_MS,
      { state: "unsettled", calls: 1 },
    ],
    [
      "a live and a gone process: wait for the live one",
      [spec({ inFlight: 1, updatedAt: iso(T) }), spec({ inFlight: 3, updatedAt: "not a time" })],
      T,
      { state: "wait", calls: 1 },
    ],
  ];
  for (const [name, specs, finishedAt, want] of cases) {
    it(name, () => expect(meteringState(specs, finishedAt, T)).toEqual(want));
  }
});
