import { describe, expect, it } from "vitest";
import {
  buildReport,
  type Injection,
  logLinesAround,
  parseTimestampedLog,
  percentile,
  table,
} from "./report.js";
import type { Fault } from "./schedule.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const fault = (at: number, kind: Fault["kind"]): Fault => ({
  at,
  kind,
  target: "leader",
  windowMs: 30_000,
  params: {},
});
const injection = (f: Fault, skipped = false): Injection => ({
  fault: f,
  firedAt: f.at,
  outcome: "x",
  skipped,
});

describe("the soak's report (docs/soak.md#the-report)", () => {
  it.each([
    { xs: [], p: 50, want: null },
    { xs: [5], p: 99, want: 5 },
    { xs: [4, 1, 3, 2], p: 50, want: 2 },
    { xs: Array.from({ length: 100 }, (_, i) => i + 1), p: 99, want: 99 },
  ])("percentile $p of $xs", ({ xs, p, want }) => {
    expect(percentile(xs, p)).toBe(want);
  });

  it("parses a timestamped pod log and keeps the lines around a time", () => {
    const lines = parseTimestampedLog(
      "agent-controller-a",
      "2026-01-01T00:00:01.000000000Z first\nno time here\n2026-01-01T00:00:30.5Z second line\n",
    );
    expect(lines).toEqual([
      { pod: "agent-controller-a", at: T0 + 1_000, text: "first" },
      { pod: "agent-controller-a", at: T0 + 30_500, text: "second line" },
    ]);
    expect(logLinesAround(lines, T0 + 5_000, 10_000).map((l) => l.text)).toEqual(["first"]);
  });

  it("has the totals at the top level, counts faults by kind and each invariant, and places each violation among the faults and log lines around it", () => {
    const schedule = [
      fault(10_000, "leader-sigkill"),
      fault(50_000, "run-pod-delete"),
      fault(500_000, "leader-evict"),
    ];
    const report = buildReport({
      seed: 7,
      startedAt: T0,
      endedAt: T0 + 600_000,
      load: { start: [1, 1, 1], end: [2, 2, 2] },
      schedule,
      injections: [
        injection(schedule[0] as Fault),
        injection(schedule[1] as Fault),
        injection(schedule[2] as Fault, true),
      ],
      created: 30,
      toTerminalMs: Array.from({ length: 20 }, (_, i) => (i + 1) * 1_000),
      violations: [{ invariant: "stuck", agent: "a-1", at: T0 + 60_000, detail: "Running for 400 s" }],
      logs: [
        { pod: "agent-controller-x", at: T0 + 55_000, text: "reconcile a-1" },
        { pod: "agent-controller-x", at: T0 + 300_000, text: "far away" },
      ],
      notYet: ["realtime sessions"],
    });
    expect(report).toMatchObject({
      agents: 30,
      faults: 2,
      violations: 1,
      terminal: 20,
      runsPerMinute: 2,
      skippedFaults: 1,
    });
    expect(report.faultsByKind).toEqual({ "leader-sigkill": 1, "run-pod-delete": 1 });
    expect(report.invariants).toEqual({
      stuck: 1,
      lost: 0,
      "two-jobs": 0,
      "batch-twice": 0,
      concurrency: 0,
      "terminal-agrees": 0,
    });
    expect(report.toTerminalMs).toEqual({ p50: 10_000, p99: 20_000 });
    const v = report.violationList[0];
    expect(v?.faultsAround.map((f) => f.kind)).toEqual(["leader-sigkill", "run-pod-delete"]);
    expect(v?.controllerLog).toEqual(["2026-01-01T00:00:55.000Z agent-controller-x reconcile a-1"]);
    const printed = table(report).map((r) => r.join(" | "));
    expect(printed).toContain("VIOLATION stuck a-1 at +60 s | Running for 400 s");
    expect(printed).toContain("  fault leader-sigkill | 1");
    expect(printed).toContain("  invariant stuck | 1");
  });

  it("a violation that lasted looks for faults from when it began", () => {
    const schedule = [fault(10_000, "leader-sigkill"), fault(500_000, "leader-evict")];
    const report = buildReport({
      seed: 1,
      startedAt: T0,
      endedAt: T0 + 900_000,
      load: { start: [], end: [] },
      schedule,
      injections: [],
      created: 1,
      toTerminalMs: [],
      violations: [{ invariant: "lost", agent: "a", at: T0 + 900_000, since: T0 + 5_000, detail: "gone" }],
      logs: [],
      notYet: [],
    });
    expect(report.violationList[0]?.faultsAround.map((f) => f.kind)).toEqual([
      "leader-sigkill",
      "leader-evict",
    ]);
  });
});
