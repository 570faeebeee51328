import { describe, expect, it } from "vitest";
import { iso, station, T0 } from "../../../test/support/core-builders.js";
import { budgetVerdict, MAX_SPEND_ENTRIES, type SpendEntry, windowMs, withSpend } from "./budget.js";

const H = 3_600_000;
const entry = (agent: string, at: number, costUSD: string): SpendEntry => ({
  agent,
  completedAt: iso(at),
  costUSD,
});
const budgeted = (limitUSD: number, window: string, spend: SpendEntry[]) => ({
  ...station().spec({ budget: { limitUSD, window } }).build(),
  status: { spend },
});

describe("windowMs", () => {
  it.each([
    ["90m", 90 * 60_000],
    ["24h", 24 * H],
    ["30d", 30 * 24 * H],
  ])("%s", (w, ms) => expect(windowMs(w)).toBe(ms));
  it.each(["", "0h", "24", "1w", "-1d", "1.5h", undefined])("refuses %j", (w) =>
    expect(windowMs(w)).toBeUndefined(),
  );
});

describe("budgetVerdict", () => {
  it("is none without a budget", () => {
    expect(budgetVerdict(station().build(), T0)).toEqual({ state: "none" });
    expect(budgetVerdict(undefined, T0)).toEqual({ state: "none" });
  });

  it("sums the entries inside the window, in micro-dollars (0.1 + 0.2 is 0.3)", () => {
    const s = budgeted(0.3, "1h", [
      entry("a", T0 - 10_000, "0.1"),
      entry("b", T0, "0.2"),
      entry("c", T0 - 2 * H, "5"),
    ]);
    const v = budgetVerdict(s, T0 + 1000);
    expect(v.state).toBe("exhausted");
    // Room frees when a's 0.1 leaves the window: one hour after it ended.
    expect(v).toMatchObject({ spentUsd: 0.3, limitUsd: 0.3, freesAt: T0 - 10_000 + H });
  });

  it("is open below the limit", () => {
    expect(budgetVerdict(budgeted(1, "1h", [entry("a", T0, "0.99")]), T0)).toEqual({
      state: "open",
      spentUsd: 0.99,
      limitUsd: 1,
    });
  });

  it("frees room only once enough has left the window, oldest first", () => {
    const s = budgeted(1, "24h", [
      entry("a", T0, "0.5"),
      entry("b", T0 + H, "0.5"),
      entry("c", T0 + 2 * H, "0.5"),
    ]);
    // 1.5 spent: dropping a leaves 1.0 (still at the limit), dropping b too leaves 0.5.
    expect(budgetVerdict(s, T0 + 3 * H)).toMatchObject({ state: "exhausted", freesAt: T0 + H + 24 * H });
    expect(budgetVerdict(s, T0 + H + 24 * H).state).toBe("open");
  });

  it("a limit of 0 never frees room", () => {
    const v = budgetVerdict(budgeted(0, "24h", []), T0);
    expect(v).toEqual({ state: "exhausted", spentUsd: 0, limitUsd: 0, window: "24h" });
  });
});

describe("withSpend", () => {
  it("adds a run once: the same Agent uid again changes nothing", () => {
    const once = withSpend([], entry("a", T0, "0.1"), H, T0) ?? [];
    expect(once).toEqual([entry("a", T0, "0.1")]);
    expect(withSpend(once, entry("a", T0, "0.1"), H, T0)).toBeUndefined();
  });

  it("drops the entries that left the window and keeps the list in time order", () => {
    const list = [entry("old", T0 - 2 * H, "1"), entry("b", T0, "0.2")];
    expect(withSpend(list, entry("c", T0 - 1000, "0.3"), H, T0)).toEqual([
      entry("c", T0 - 1000, "0.3"),
      entry("b", T0, "0.2"),
    ]);
  });

  it(`stays within ${MAX_SPEND_ENTRIES} entries, merging the oldest into one dated at the newest of them`, () => {
    const list = Array.from({ length: MAX_SPEND_ENTRIES }, (_, i) => entry(`a${i}`, T0 + i * 1000, "0.01"));
    const next = withSpend(list, entry("new", T0 + MAX_SPEND_ENTRIES * 1000, "0.5"), 24 * H, T0 + H) ?? [];
    expect(next).toHaveLength(MAX_SPEND_ENTRIES);
    expect(next[0]).toEqual({ agent: "", completedAt: iso(T0 + 1000), costUSD: "0.02" });
    expect(next.at(-1)).toEqual(entry("new", T0 + MAX_SPEND_ENTRIES * 1000, "0.5"));
    // Nothing is lost: the sum is the same.
    const sum = (l: SpendEntry[]) => l.reduce((s, e) => s + Math.round(Number(e.costUSD) * 1e6), 0);
    expect(sum(next)).toBe(sum(list) + 500_000);
  });
});
