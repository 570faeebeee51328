import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agent, station, T0 } from "../../../test/support/core-builders.js";
import { agentsToPrune, beyondHistoryLimit } from "./pruning.js";

const done = (name: string, phase: "Succeeded" | "Failed", min: number) =>
  agent(name)
    .completed(phase, T0 + min * 60_000)
    .build();

describe("agentsToPrune (docs/reconcile.md#concurrency-and-pruning)", () => {
  const agents = [
    done("s1", "Succeeded", 1),
    done("s2", "Succeeded", 2),
    done("s3", "Succeeded", 3),
    done("s4", "Succeeded", 4),
    done("f1", "Failed", 1),
    done("f2", "Failed", 2),
    agent("p").build(),
    agent("r").running(T0).build(),
  ];
  it.each([
    ["defaults keep 3 of each, newest completedAt", {}, ["s1"]],
    [
      "limits per phase",
      { successfulRunsHistoryLimit: 1, failedRunsHistoryLimit: 1 },
      ["s3", "s2", "s1", "f1"],
    ],
    [
      "limit 0 keeps none",
      { successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 5 },
      ["s4", "s3", "s2", "s1"],
    ],
  ])("%s", (_n, spec, want) => {
    expect(agentsToPrune(station().spec(spec).build(), agents).map((a) => a.metadata.name)).toEqual(want);
  });
  it("runs that finished in the same second: the later created is kept, then name order", () => {
    // completedAt has whole seconds; four failures in one second under a limit of 3.
    const sameSecond = (name: string, createdMin: number) =>
      agent(name)
        .created(T0 + createdMin * 60_000)
        .completed("Failed", T0 + 10 * 60_000)
        .build();
    const four = [sameSecond("a-last", 4), sameSecond("b-first", 1), sameSecond("c", 2), sameSecond("d", 3)];
    const st = station().spec({ failedRunsHistoryLimit: 3 }).build();
    expect(agentsToPrune(st, four).map((a) => a.metadata.name)).toEqual(["b-first"]);
    expect(four.filter((a) => beyondHistoryLimit(st, [...four], a)).map((a) => a.metadata.name)).toEqual([
      "b-first",
    ]);
    const twins = [sameSecond("y", 1), sameSecond("x", 1)];
    expect(
      agentsToPrune(station().spec({ failedRunsHistoryLimit: 1 }).build(), twins).map((a) => a.metadata.name),
    ).toEqual(["y"]);
  });
  it("ignores other Stations' Agents and Agents already being deleted", () => {
    const other = agent("o").spec({ stationRef: "other" }).completed("Failed", T0).build();
    const gone = agent("g").completed("Failed", T0).deleting().build();
    expect(agentsToPrune(station().spec({ failedRunsHistoryLimit: 0 }).build(), [other, gone])).toEqual([]);
  });
});

describe("beyondHistoryLimit: the same verdict as agentsToPrune, for one Agent", () => {
  const agents = [
    done("s1", "Succeeded", 1),
    done("s2", "Succeeded", 2),
    done("s3", "Succeeded", 3),
    done("s4", "Succeeded", 4),
    done("f1", "Failed", 1),
    done("f2", "Failed", 2),
    agent("p").build(),
    agent("r").running(T0).build(),
  ];
  it.each([
    {},
    { successfulRunsHistoryLimit: 1, failedRunsHistoryLimit: 1 },
    { successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 0 },
    { successfulRunsHistoryLimit: 5, failedRunsHistoryLimit: 2 },
  ])("limits %o", (spec) => {
    const st = station().spec(spec).build();
    const victims = agentsToPrune(st, agents).map((a) => a.metadata.name);
    const each = agents.filter((a) => beyondHistoryLimit(st, agents, a)).map((a) => a.metadata.name);
    expect(each.sort()).toEqual(victims.sort());
  });
  it("a failed run with failedRunsHistoryLimit 0 is beyond it even alone", () => {
    const f = done("f", "Failed", 1);
    expect(beyondHistoryLimit(station().spec({ failedRunsHistoryLimit: 0 }).build(), [f], f)).toBe(true);
  });
});

describe("beyondHistoryLimit over a list it has seen (computed once per list and Station)", () => {
  const listArb = fc.array(
    fc.record({
      phase: fc.constantFrom("Succeeded", "Failed", "Running", "Pending") as fc.Arbitrary<string>,
      min: fc.integer({ min: 0, max: 5 }),
      deleting: fc.boolean(),
      other: fc.boolean(),
    }),
    { maxLength: 12 },
  );
  it("answers as the scan of the list does, for every member and every limit", () => {
    fc.assert(
      fc.property(listArb, fc.nat(3), fc.nat(3), (rows, ok, failed) => {
        const list = rows.map((r, i) => {
          const b = agent(`a-${i}`);
          if (r.phase === "Running") b.running(T0);
          if (r.phase === "Succeeded" || r.phase === "Failed") b.completed(r.phase, T0 + r.min * 60_000);
          if (r.deleting) b.deleting();
          if (r.other) b.spec({ stationRef: "other" });
          return b.build();
        });
        const st = station().spec({ successfulRunsHistoryLimit: ok, failedRunsHistoryLimit: failed }).build();
        for (const a of list) {
          // A copy is not a member: it takes the scan.
          expect(beyondHistoryLimit(st, list, a)).toBe(beyondHistoryLimit(st, list, structuredClone(a)));
        }
        // Another Station object (its limits edited) is not answered from the first one's history.
        const st2 = station()
          .spec({ successfulRunsHistoryLimit: ok + 1, failedRunsHistoryLimit: failed + 1 })
          .build();
        for (const a of list) {
          expect(beyondHistoryLimit(st2, list, a)).toBe(beyondHistoryLimit(st2, list, structuredClone(a)));
        }
      }),
      { numRuns: 300 },
    );
  });
});
