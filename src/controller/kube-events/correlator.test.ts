import { describe, expect, it } from "vitest";
import type { KubeEvent } from "../../core/actions.js";
import { AGGREGATED_PREFIX, EventCorrelator } from "./correlator.js";
import { LruMap } from "./lru.js";
import { TokenBucket } from "./token-bucket.js";

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const MIN = 60_000;
const agentA = { namespace: "ai-agents", name: "a", uid: "uid-a" };
const agentB = { namespace: "ai-agents", name: "b", uid: "uid-b" };
const ev = (note: string, reason = "Queued"): KubeEvent => ({
  type: "Normal",
  reason,
  action: "Queue",
  note,
});

describe("EventCorrelator", () => {
  it("the same reason and note on the same object is one Event whose series count grows", () => {
    const c = new EventCorrelator();
    const first = c.correlate({ regarding: agentA, event: ev("queued"), at: T0 });
    const second = c.correlate({ regarding: agentA, event: ev("queued"), at: T0 + 1000 });
    const third = c.correlate({ regarding: agentA, event: ev("queued"), at: T0 + 2000 });
    expect(first).toMatchObject({ kind: "create", note: "queued" });
    expect(second).toEqual({
      kind: "series",
      name: (first as { name: string }).name,
      note: "queued",
      count: 2,
    });
    expect(third).toMatchObject({ kind: "series", count: 3 });
  });

  it("a different note, reason or object is a new Event", () => {
    const c = new EventCorrelator();
    const kinds = [
      c.correlate({ regarding: agentA, event: ev("one"), at: T0 }),
      c.correlate({ regarding: agentA, event: ev("two"), at: T0 }),
      c.correlate({ regarding: agentA, event: ev("one", "Started"), at: T0 }),
      c.correlate({ regarding: agentB, event: ev("one"), at: T0 }),
    ];
    expect(kinds.map((k) => k.kind)).toEqual(["create", "create", "create", "create"]);
    const names = kinds.map((k) => (k as { name: string }).name);
    expect(new Set(names).size).toBe(4);
  });

  it("names are <object>.<hex>, unique even within one millisecond", () => {
    const c = new EventCorrelator();
    const a = c.correlate({ regarding: agentA, event: ev("x"), at: T0 }) as { name: string };
    const b = c.correlate({ regarding: agentA, event: ev("y"), at: T0 }) as { name: string };
    expect(a.name).toMatch(/^a\.[0-9a-f]+$/);
    expect(a.name).not.toBe(b.name);
  });

  it("the 10th distinct note of one reason within 10 minutes is folded into one combined Event", () => {
    const c = new EventCorrelator();
    const out = Array.from({ length: 12 }, (_, i) =>
      c.correlate({ regarding: agentA, event: ev(`position ${i}`), at: T0 + i * 1000 }),
    );
    expect(out.slice(0, 9).map((o) => o.kind)).toEqual(Array(9).fill("create"));
    expect(out[9]).toMatchObject({ kind: "create", note: `${AGGREGATED_PREFIX}position 9` });
    expect(out[10]).toMatchObject({
      kind: "series",
      name: (out[9] as { name: string }).name,
      count: 2,
    });
    expect(out[11]).toMatchObject({ kind: "series", count: 3 });
  });

  it("the similarity window restarts after 10 quiet minutes", () => {
    const c = new EventCorrelator();
    for (let i = 0; i < 9; i++) c.correlate({ regarding: agentA, event: ev(`n${i}`), at: T0 });
    const later = c.correlate({ regarding: agentA, event: ev("n9"), at: T0 + 11 * MIN });
    expect(later).toMatchObject({ kind: "create", note: "n9" });
  });

  it("rate-limits per object: a burst of 25, then one Event per 5 minutes; other objects unaffected", () => {
    const c = new EventCorrelator({ maxSimilar: 1000 });
    const sent = Array.from({ length: 30 }, (_, i) =>
      c.correlate({ regarding: agentA, event: ev(`n${i}`), at: T0 }),
    ).filter((o) => o.kind !== "skip").length;
    expect(sent).toBe(25);
    expect(c.correlate({ regarding: agentB, event: ev("n"), at: T0 }).kind).toBe("create");
    expect(c.correlate({ regarding: agentA, event: ev("n100"), at: T0 + 4 * MIN }).kind).toBe("skip");
    expect(c.correlate({ regarding: agentA, event: ev("n101"), at: T0 + 5 * MIN }).kind).toBe("create");
  });

  it("a rate-limited repeat still counts, as in client-go (the next one sent carries the total)", () => {
    const c = new EventCorrelator({ burst: 1, refillEveryMs: MIN });
    expect(c.correlate({ regarding: agentA, event: ev("x"), at: T0 }).kind).toBe("create");
    expect(c.correlate({ regarding: agentA, event: ev("x"), at: T0 + 1 }).kind).toBe("skip");
    expect(c.correlate({ regarding: agentA, event: ev("x"), at: T0 + MIN })).toMatchObject({
      kind: "series",
      count: 3,
    });
  });
});

describe("TokenBucket", () => {
  it("starts full, refills one token per interval up to the burst", () => {
    const b = new TokenBucket(2, 1000, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([true, true, false]);
    expect(b.take(999)).toBe(false);
    expect(b.take(1000)).toBe(true);
    expect([b.take(100_000), b.take(100_000), b.take(100_000)]).toEqual([true, true, false]);
  });
});

describe("LruMap", () => {
  it("forgets the least recently used entry beyond its capacity", () => {
    const m = new LruMap<string, number>(2);
    m.set("a", 1);
    m.set("b", 2);
    m.get("a");
    m.set("c", 3);
    expect([m.get("a"), m.get("b"), m.get("c"), m.size]).toEqual([1, undefined, 3, 2]);
  });

  it("refuses a capacity below 1", () => {
    expect(() => new LruMap(0)).toThrow("LruMap capacity must be a positive integer, got: 0");
  });
});
