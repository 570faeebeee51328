import { describe, expect, it } from "vitest";
import { station } from "../../test/support/core-builders.js";
import { MemoryUsageObjects } from "../../test/support/usage-objects.js";
import type { Station } from "../core/types.js";
import { BudgetGate } from "./budget-gate.js";
import { ModelUsageStore } from "./usage-store.js";

const T = Date.parse("2026-12-07T12:00:00Z");
const run = (uid: string) => ({ namespace: "ai-agents", name: uid, uid });
const budgeted = (limitUSD: number): Station =>
  station("review")
    .spec({ budget: { limitUSD, window: "1h" } })
    .build();

/** Gates of `processes` gateway processes writing to one set of objects, as replicas do. */
function replicas(st: Station | undefined, processes: number, objects = new MemoryUsageObjects()) {
  return Array.from({ length: processes }, (_, i) => {
    const store = new ModelUsageStore({ objects, replica: `gw-${i}`, processId: `p${i}`, now: () => T });
    const gate = new BudgetGate({
      station: async () => st,
      records: async () => [...objects.objects.values()].map((o) => structuredClone(o)),
      reserve: (r, v, s, usd) => store.reserve(r, v, s, usd),
      release: (r, v, usd) => store.release(r, v, usd),
      now: () => T,
    });
    return { store, gate, objects };
  });
}

describe("BudgetGate: a Station's budget held while its runs run (docs/gateway.md#budgets-in-flight)", () => {
  it("a Station without a budget: admitted, nothing reserved or written", async () => {
    const [r] = replicas(station("review").build(), 1);
    expect(await r?.gate.admit(run("a"), "anthropic", "review", { usd: 5, why: "w" })).toEqual({
      ok: true,
      reservedUsd: 0,
    });
    expect(r?.objects.objects.size).toBe(0);
  });

  it("requests are admitted while their reservations fit; the one that does not fit is refused and its reservation taken back", async () => {
    const [r] = replicas(budgeted(1), 1);
    if (!r) throw new Error("no replica");
    expect(await r.gate.admit(run("a"), "anthropic", "review", { usd: 0.6, why: "w" })).toEqual({
      ok: true,
      reservedUsd: 0.6,
    });
    const refused = await r.gate.admit(run("b"), "anthropic", "review", {
      usd: 0.5,
      why: "output limit 1000",
    });
    expect(refused).toMatchObject({ ok: false });
    expect(refused.ok === false && refused.message).toContain(
      "budget of Station ai-agents/review reached: $0.6 spent or reserved of $1",
    );
    // b's reservation is gone again, a's stands until its call is recorded.
    const reserved = [...r.objects.objects.values()].map((o) => [o.spec.agent.uid, o.spec.reservedUSD]);
    expect(reserved.sort()).toEqual([
      ["a", "0.6"],
      ["b", "0"],
    ]);
  });

  it("a recorded call releases its reservation and counts what it cost", async () => {
    const [r] = replicas(budgeted(1), 1);
    if (!r) throw new Error("no replica");
    await r.gate.admit(run("a"), "anthropic", "review", { usd: 0.9, why: "w" });
    await r.store.record({
      run: run("a"),
      vendor: "anthropic",
      route: "messages",
      status: 200,
      complete: true,
      clientAborted: false,
      costUsd: 0.3,
      reservedUsd: 0.9,
      startedAt: new Date(T),
      endedAt: new Date(T),
    });
    expect(r.objects.only().spec).toMatchObject({ meteredUSD: "0.3", reservedUSD: "0" });
    expect((await r.gate.admit(run("a"), "anthropic", "review", { usd: 0.7, why: "w" })).ok).toBe(true);
    expect((await r.gate.admit(run("a"), "anthropic", "review", { usd: 0.1, why: "w" })).ok).toBe(false);
  });

  it("two replicas admitting at once never let both through when only one fits (each writes its reservation before it lists)", async () => {
    const [a, b] = replicas(budgeted(1), 2);
    if (!a || !b) throw new Error("no replicas");
    const results = await Promise.all([
      a.gate.admit(run("x"), "anthropic", "review", { usd: 0.7, why: "w" }),
      b.gate.admit(run("y"), "anthropic", "review", { usd: 0.7, why: "w" }),
    ]);
    expect(results.filter((r) => r.ok).length).toBeLessThanOrEqual(1);
  });

  it("the records cannot be read: it throws (the request is refused 503) and takes its reservation back", async () => {
    const objects = new MemoryUsageObjects();
    const store = new ModelUsageStore({ objects, replica: "gw", processId: "p", now: () => T });
    const gate = new BudgetGate({
      station: async () => budgeted(1),
      records: async () => {
        throw new Error("the API server answered 503");
      },
      reserve: (r, v, s, usd) => store.reserve(r, v, s, usd),
      release: (r, v, usd) => store.release(r, v, usd),
      now: () => T,
    });
    await expect(gate.admit(run("a"), "anthropic", "review", { usd: 0.5, why: "w" })).rejects.toThrow("503");
    expect(objects.only().spec.reservedUSD).toBe("0");
  });
});
