import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_BASE_MS, MAX_RETRY_WAIT_MS, MIN_RETRY_WAIT_MS, retryWaitMs } from "./backoff.js";

describe("the wait before a provider retry", () => {
  it("is the wait the provider asked for, in whole seconds, at least one", () => {
    expect(retryWaitMs(1, 12, () => 0.9)).toBe(12_000);
    expect(retryWaitMs(7, 2.2, () => 0.1)).toBe(3_000);
    expect(retryWaitMs(1, 0, () => 0.5)).toBe(MIN_RETRY_WAIT_MS);
  });

  it("else doubles from the base with jitter between half and all of it", () => {
    const lowest = [1, 2, 3, 4].map((n) => retryWaitMs(n, undefined, () => 0));
    const highest = [1, 2, 3, 4].map((n) => retryWaitMs(n, undefined, () => 0.999999));
    expect(lowest).toEqual([2_500, 5_000, 10_000, 20_000]);
    expect(highest).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(retryWaitMs(2, undefined, () => 0.5)).toBe(7_500);
    expect(DEFAULT_RETRY_BASE_MS).toBe(5_000);
  });

  it("never waits longer than the ceiling, however many retries", () => {
    expect(retryWaitMs(40, undefined, () => 0.999999)).toBeLessThanOrEqual(MAX_RETRY_WAIT_MS);
    expect(retryWaitMs(40, undefined, () => 0)).toBe(MAX_RETRY_WAIT_MS / 2);
  });

  it("a smaller base (AGENT_PROVIDER_RETRY_BASE_MS) scales the backoff, never below one second", () => {
    expect(retryWaitMs(1, undefined, () => 0, 200)).toBe(MIN_RETRY_WAIT_MS);
    expect(retryWaitMs(5, undefined, () => 0, 200)).toBe(1_600);
  });
});
