import { describe, expect, it } from "vitest";
import { agent, station, T0 } from "../../test/support/core-builders.js";
import { agentsToPrune, beyondHistoryLimit } from "./pruning.js";

const done = (name: string, phase: "Succeeded" | "Failed", min: number) =>
  agent(name)
    .completed(phase, T0 + min * 60_000)
    .build();

describe("agentsToPrune (crds.md §2.3)", () => {
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
