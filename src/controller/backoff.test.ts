import { describe, expect, it } from "vitest";
import { Backoff, backoffDelay } from "./backoff.js";

describe("backoffDelay", () => {
  const opts = (r: number) => ({ baseMs: 100, maxMs: 3000, random: () => r });
  it.each([
    // attempt, random, expected
    [0, 0, 50],
    [0, 0.999999, 100],
    [1, 0, 100],
    [1, 0.5, 150],
    [3, 0, 400],
    [4, 0.5, 1200],
    [5, 0, 1500], // 3200 capped to 3000
    [50, 0.999999, 3000],
  ])("attempt %i random %f → %i ms", (attempt, r, expected) => {
    expect(backoffDelay(attempt, opts(r))).toBe(expected);
  });

  it("grows then saturates at the cap", () => {
    const b = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 1 - Number.EPSILON });
    const seq = Array.from({ length: 6 }, () => b.next());
    expect(seq).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(b.failures).toBe(6);
    b.reset();
    expect(b.next()).toBe(100);
  });
});
