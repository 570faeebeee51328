/** The AIMD learner of a provider endpoint's limit (learner.ts), one case per row. */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_HOLD_MS,
  DEFAULT_MAX_HOLD_MS,
  type EndpointRecord,
  FORGET_MS,
  learnCleanRun,
  learnStart,
  learnThrottle,
  learnTokens,
  MAX_LEARNED_TOKENS_PER_RUN,
  restrains,
  settle,
  type ThrottleSignal,
} from "./learner.js";

const T = Date.UTC(2026, 10, 30, 12, 0, 0);
const signal = (s: Partial<ThrottleSignal> = {}): ThrottleSignal => ({
  provider: "anthropic",
  status: 429,
  at: T,
  agent: "a",
  runStartedAt: T - 60_000,
  source: "run",
  ...s,
});

describe("learnThrottle", () => {
  it.each<{
    name: string;
    rec?: EndpointRecord;
    t: Partial<ThrottleSignal>;
    inFlight: number;
    now: number;
    out: EndpointRecord;
  }>([
    {
      name: "first throttle: the window is half the runs that were going; new starts wait for the retry-after",
      t: { retryAfterSeconds: 30 },
      inFlight: 10,
      now: T + 1000,
      out: {
        window: 5,
        cutAt: T + 1000,
        holdUntil: T + 30_000,
        lastThrottle: signal({ retryAfterSeconds: 30 }),
      },
    },
    {
      name: "no retry-after: new starts wait the default hold",
      t: {},
      inFlight: 4,
      now: T,
      out: { window: 2, cutAt: T, holdUntil: T + DEFAULT_HOLD_MS, lastThrottle: signal() },
    },
    {
      name: "a retry-after already passed holds nothing, but the window is still cut",
      t: { retryAfterSeconds: 5 },
      inFlight: 3,
      now: T + 60_000,
      out: { window: 1, cutAt: T + 60_000, lastThrottle: signal({ retryAfterSeconds: 5 }) },
    },
    {
      name: "never below one run",
      t: {},
      inFlight: 1,
      now: T,
      out: { window: 1, cutAt: T, holdUntil: T + DEFAULT_HOLD_MS, lastThrottle: signal() },
    },
    {
      name: "a throttle of a run started before the last cut belongs to the episode already answered: no second cut",
      rec: { window: 5, cutAt: T - 10_000 },
      t: { runStartedAt: T - 60_000 },
      inFlight: 10,
      now: T,
      out: {
        window: 5,
        cutAt: T - 10_000,
        holdUntil: T + DEFAULT_HOLD_MS,
        lastThrottle: signal({ runStartedAt: T - 60_000 }),
      },
    },
    {
      name: "a run started under the cut window throttled too: cut again to 0.7, from the smaller of window and runs going",
      rec: { window: 5, cutAt: T - 60_000 },
      t: { runStartedAt: T - 30_000 },
      inFlight: 8,
      now: T,
      out: {
        window: 3,
        cutAt: T,
        holdUntil: T + DEFAULT_HOLD_MS,
        lastThrottle: signal({ runStartedAt: T - 30_000 }),
      },
    },
    {
      name: "cuts are at least MIN_CUT_GAP_MS apart (batch submits in quick succession)",
      rec: { window: 4, cutAt: T - 1000 },
      t: { runStartedAt: T, source: "batch" },
      inFlight: 4,
      now: T,
      out: {
        window: 4,
        cutAt: T - 1000,
        holdUntil: T + DEFAULT_HOLD_MS,
        lastThrottle: signal({ runStartedAt: T, source: "batch" }),
      },
    },
    {
      name: "a later hold never shortens an earlier, longer one; an older report does not replace the latest throttle",
      rec: { window: 2, cutAt: T, holdUntil: T + 120_000, lastThrottle: signal({ at: T + 5000 }) },
      t: { retryAfterSeconds: 10 },
      inFlight: 2,
      now: T + 1000,
      out: { window: 2, cutAt: T, holdUntil: T + 120_000, lastThrottle: signal({ at: T + 5000 }) },
    },
  ])("$name", ({ rec, t, inFlight, now, out }) => {
    expect(learnThrottle(rec, signal(t), inFlight, now)).toEqual(out);
  });
});

describe("learnCleanRun", () => {
  it("widens a window in use by 1/window: one more run per window's worth of clean runs", () => {
    let rec: EndpointRecord | undefined = { window: 4, cutAt: T };
    for (let i = 0; i < 4; i++) rec = learnCleanRun(rec, T + 1000, Math.floor(rec?.window ?? 0));
    expect(rec?.window).toBeGreaterThan(4.9);
    expect(rec?.window).toBeLessThan(5);
    rec = learnCleanRun(rec, T + 1000, 5);
    expect(Math.floor(rec?.window ?? 0)).toBe(5);
  });

  it.each<{ name: string; rec?: EndpointRecord; startedAt: number; inFlight: number }>([
    { name: "nothing learned yet: nothing to widen", startedAt: T, inFlight: 10 },
    {
      name: "a run started before the cut says nothing about the cut window",
      rec: { window: 3, cutAt: T },
      startedAt: T - 1,
      inFlight: 3,
    },
    {
      name: "a window not in use (fewer runs going than it allows) does not widen",
      rec: { window: 6, cutAt: T },
      startedAt: T + 1,
      inFlight: 4,
    },
  ])("$name", ({ rec, startedAt, inFlight }) => {
    expect(learnCleanRun(rec, startedAt, inFlight)).toEqual(rec);
  });

  it("AIMD: repeated throttles and clean runs settle below the capacity and come back up to it", () => {
    // An endpoint taking 12 concurrent runs: a start beyond that throttles. Each round every run
    // in flight ends, cleanly or throttled, and the next round starts as many as the window allows.
    const capacity = 12;
    let rec: EndpointRecord | undefined;
    let now = T;
    let inFlight = 40;
    const windows: number[] = [];
    for (let round = 0; round < 60; round++) {
      const startedAt = now;
      now += 60_000;
      if (inFlight > capacity) {
        rec = learnThrottle(rec, signal({ at: now - 1000, runStartedAt: startedAt }), inFlight, now);
      } else {
        for (let i = 0; i < inFlight; i++) rec = learnCleanRun(rec, startedAt, inFlight);
      }
      windows.push(Math.floor(rec?.window ?? inFlight));
      inFlight = Math.floor(rec?.window ?? inFlight);
    }
    const late = windows.slice(20);
    expect(Math.max(...late)).toBeLessThanOrEqual(capacity + 1);
    // The sawtooth stays above 0.7 of the capacity (one cut, then additive increase recovers) and
    // keeps about nine tenths of it in use on average.
    expect(Math.min(...late)).toBeGreaterThanOrEqual(Math.floor(capacity * 0.7));
    const used = late.map((w) => Math.min(w, capacity));
    expect(used.reduce((a, b) => a + b, 0) / used.length).toBeGreaterThan(capacity * 0.85);
  });
});

describe("a forged throttle report: kept within the run's lifetime and the maximum hold", () => {
  const NOW = T + 10_000;
  const MAX = DEFAULT_MAX_HOLD_MS;
  it.each<{ name: string; t: Partial<ThrottleSignal>; maxHoldMs?: number; at: number; holdUntil: number }>([
    { name: "retry-after 3,000,000 s", t: { retryAfterSeconds: 3_000_000 }, at: T, holdUntil: T + MAX },
    {
      name: "retry-after 2^53-1 s",
      t: { retryAfterSeconds: Number.MAX_SAFE_INTEGER },
      at: T,
      holdUntil: T + MAX,
    },
    { name: "retry-after Infinity", t: { retryAfterSeconds: Number.POSITIVE_INFINITY }, at: T, holdUntil: T },
    { name: "retry-after NaN", t: { retryAfterSeconds: Number.NaN }, at: T, holdUntil: T },
    {
      name: "answered in year 9999: at the run's end (now)",
      t: { at: Date.UTC(9999, 11, 31), retryAfterSeconds: 30 },
      at: NOW,
      holdUntil: NOW + 30_000,
    },
    {
      name: "answered after the run ended",
      t: { at: T + 9_000, runEndedAt: T + 5_000, retryAfterSeconds: 30 },
      at: T + 5_000,
      holdUntil: T + 35_000,
    },
    {
      name: "answered before the run started",
      t: { at: 0, runStartedAt: T - 60_000 },
      at: T - 60_000,
      holdUntil: T - 60_000 + DEFAULT_HOLD_MS,
    },
    { name: "answered at NaN: now", t: { at: Number.NaN }, at: NOW, holdUntil: NOW + DEFAULT_HOLD_MS },
    {
      name: "PROVIDER_MAX_HOLD_SECONDS=60",
      t: { retryAfterSeconds: 3_000_000 },
      maxHoldMs: 60_000,
      at: T,
      holdUntil: T + 60_000,
    },
  ])("$name", ({ t, maxHoldMs, at, holdUntil }) => {
    const rec = learnThrottle(undefined, signal(t), 2, NOW, maxHoldMs);
    expect(rec.lastThrottle?.at).toBe(at);
    if (holdUntil > NOW) expect(rec.holdUntil).toBe(holdUntil);
    else expect(rec.holdUntil).toBeUndefined();
    expect(rec.holdUntil ?? NOW).toBeLessThanOrEqual(NOW + (maxHoldMs ?? MAX));
    expect(rec.lastThrottle?.retryAfterSeconds ?? 0).toBeLessThanOrEqual((maxHoldMs ?? MAX) / 1000);
  });

  it("keeps the retry-after the run reported beside the one it was held to", () => {
    const rec = learnThrottle(undefined, signal({ retryAfterSeconds: 3_000_000 }), 2, NOW);
    expect(rec.lastThrottle).toMatchObject({ retryAfterSeconds: 3600, reportedRetryAfterSeconds: 3_000_000 });
  });
});

describe("tokens, starts, settling", () => {
  it.each([2e12, Number.MAX_SAFE_INTEGER, 1e308, Number.POSITIVE_INFINITY])(
    "one run's %d tokens count as at most MAX_LEARNED_TOKENS_PER_RUN",
    (tokens) => {
      expect(learnTokens(undefined, tokens)?.tokensPerRun).toBe(MAX_LEARNED_TOKENS_PER_RUN);
      expect(learnTokens({ tokensPerRun: 1000 }, tokens)?.tokensPerRun).toBeLessThan(
        MAX_LEARNED_TOKENS_PER_RUN,
      );
    },
  );

  it("tokens per run: the first run's, then a moving average; a run without tokens changes nothing", () => {
    let rec = learnTokens(undefined, 1000);
    expect(rec?.tokensPerRun).toBe(1000);
    rec = learnTokens(rec, 2000);
    expect(rec?.tokensPerRun).toBe(1200);
    expect(learnTokens(rec, 0)).toEqual(rec);
    expect(learnTokens(rec, Number.NaN)).toEqual(rec);
  });

  it("the latest start is kept", () => {
    expect(learnStart(learnStart(undefined, T + 5), T)).toEqual({ lastStartAt: T + 5 });
  });

  it("a hold that passed is dropped; a window is forgotten FORGET_MS after the last throttle", () => {
    const rec: EndpointRecord = {
      window: 3,
      cutAt: T,
      holdUntil: T + 30_000,
      lastThrottle: signal(),
      tokensPerRun: 500,
    };
    expect(settle(rec, T + 1000)).toEqual(rec);
    expect(settle(rec, T + 30_000)).toEqual({
      window: 3,
      cutAt: T,
      lastThrottle: signal(),
      tokensPerRun: 500,
    });
    expect(settle(rec, T + FORGET_MS)).toEqual({ tokensPerRun: 500 });
    expect(restrains(settle(rec, T + FORGET_MS))).toBe(false);
    expect(restrains(rec)).toBe(true);
  });
});
