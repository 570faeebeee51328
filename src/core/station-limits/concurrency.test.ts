import { describe, expect, it } from "vitest";
import { agent, station, T0 } from "../../../test/support/core-builders.js";
import type { StationSpec } from "../types.js";
import { admit, effectiveLimit, fallbackHasSlot } from "./concurrency.js";

const running = (name: string, startedMin: number) =>
  agent(name)
    .running(T0 + startedMin * 60_000)
    .build();
const waiting = (name: string, createdMin: number) =>
  agent(name)
    .created(T0 + createdMin * 60_000)
    .build();

describe("effectiveLimit (docs/reconcile.md#concurrency-and-pruning, docs/decisions.md D-14)", () => {
  it.each([
    [{}, 0],
    [{ maxConcurrentRuns: 3 }, 3],
    [{ maxConcurrentRuns: 3, concurrencyPolicy: "Forbid" }, 1],
    [{ maxConcurrentRuns: 0, concurrencyPolicy: "Replace" }, 1],
  ] as [Partial<StationSpec>, number][])("%j → %d", (spec, want) => {
    expect(effectiveLimit(station().spec(spec).build())).toBe(want);
  });
});

describe("admit", () => {
  const me = agent("me")
    .created(T0 + 10 * 60_000)
    .build();
  it.each([
    ["unlimited Allow starts", {}, [running("a", 0), running("b", 1)], [], { kind: "start", preempt: [] }],
    [
      "Allow below the limit starts",
      { maxConcurrentRuns: 2 },
      [running("a", 0)],
      [],
      { kind: "start", preempt: [] },
    ],
    ["Allow full waits", { maxConcurrentRuns: 1 }, [running("a", 0)], [], { kind: "wait", why: "full" }],
    [
      "Forbid full waits",
      { concurrencyPolicy: "Forbid" },
      [running("a", 0)],
      [],
      { kind: "wait", why: "full" },
    ],
    [
      "a creation issued but not yet cached counts as Running",
      { maxConcurrentRuns: 1 },
      [waiting("b", 0)],
      ["b"],
      { kind: "wait", why: "full" },
    ],
    [
      "an issued creation already cached Running is not counted twice",
      { maxConcurrentRuns: 2 },
      [running("b", 0)],
      ["b"],
      { kind: "start", preempt: [] },
    ],
    [
      "this Agent's own issued creation does not block it",
      { maxConcurrentRuns: 1 },
      [],
      ["me"],
      { kind: "start", preempt: [] },
    ],
    [
      "an older waiting Agent goes first (docs/decisions.md D-15)",
      { maxConcurrentRuns: 1 },
      [waiting("older", 0)],
      [],
      { kind: "wait", why: "queue" },
    ],
    [
      "a younger waiting Agent does not block",
      { maxConcurrentRuns: 1 },
      [waiting("younger", 20)],
      [],
      { kind: "start", preempt: [] },
    ],
    [
      "two free slots admit the second in line",
      { maxConcurrentRuns: 2 },
      [waiting("older", 0)],
      [],
      { kind: "start", preempt: [] },
    ],
    [
      "Replace deletes the oldest Running run",
      { concurrencyPolicy: "Replace" },
      [running("new", 5), running("old", 1)],
      [],
      { kind: "start", preempt: ["old", "new"] },
    ],
    [
      "Replace waits when the run to replace is not cached yet",
      { concurrencyPolicy: "Replace" },
      [waiting("b", 0)],
      ["b"],
      { kind: "wait", why: "preempt-unavailable" },
    ],
  ] as const)("%s", (_n, spec, agents, pending, want) => {
    const got = admit(me, station().spec(spec).build(), [...agents], [...pending]);
    if (got.kind === "start") {
      const names = got.preempt.map((a) => a.metadata.name);
      const wantNames = "preempt" in want ? want.preempt : [];
      expect({ kind: got.kind, preempt: names }).toEqual({ kind: want.kind, preempt: wantNames });
    } else {
      expect(got).toEqual(want);
    }
  });

  it("Replace at limit 1 with one Running run deletes exactly that run", () => {
    const got = admit(me, station().spec({ concurrencyPolicy: "Replace" }).build(), [running("a", 0)], []);
    expect(got.kind === "start" && got.preempt.map((a) => a.metadata.name)).toEqual(["a"]);
  });
});

describe("fallbackHasSlot (docs/decisions.md D-16)", () => {
  const self = agent("me").running(T0, { batchId: "b", batchFallback: true, jobName: "" }).build();
  it("ignores the Agent itself", () => {
    expect(fallbackHasSlot(self, station().spec({ maxConcurrentRuns: 1 }).build(), [self], [])).toBe(true);
  });
  it("waits while other runs fill the Station", () => {
    expect(
      fallbackHasSlot(self, station().spec({ maxConcurrentRuns: 1 }).build(), [self, running("x", 0)], []),
    ).toBe(false);
  });
});
