import { describe, expect, it } from "vitest";
import {
  agentExitFromLog,
  exitToTerminal,
  lastContainerExit,
  memoryPerPod,
  type RunStages,
  stageShares,
  stageTimes,
} from "./real-node-report.js";

const runs: RunStages[] = [
  {
    "job created": 0.1,
    "pod scheduled": 0.2,
    "init started": 1,
    "agent started": 2,
    "first model request": 3,
  },
  {
    "job created": 0.3,
    "pod scheduled": 0.4,
    "init started": 2,
    "agent started": 4,
    "first model request": 3.5,
  },
  { "job created": 0.2 },
];

describe("the real-node benchmark's report", () => {
  it("gives each stage's percentiles over the runs that reached it", () => {
    const t = stageTimes(runs);
    expect(t["job created"]).toEqual({ p50: 0.2, p90: 0.3, max: 0.3, n: 3 });
    expect(t["first model request"]).toEqual({ p50: 3, p90: 3.5, max: 3.5, n: 2 });
    expect(t.terminal.n).toBe(0);
    expect(t.terminal.p50).toBeNaN();
  });

  it("says where the time goes: each stage after the one before, negative when the watch lagged", () => {
    const s = stageShares(runs);
    expect(s["job created"]).toMatchObject({ after: "create", p50: 0.2, n: 3 });
    expect(s["init started"]).toMatchObject({ after: "pod scheduled", n: 2 });
    expect(s["init started"].p50).toBeCloseTo(0.8);
    expect(s["init started"].p90).toBeCloseTo(1.6);
    // "init done" was never seen: "agent started" after it has no run to measure.
    expect(s["agent started"]).toMatchObject({ after: "init done", n: 0 });
    expect(s["first model request"].p50).toBeCloseTo(-0.5);
    expect(s["first model request"].p90).toBeCloseTo(1);
  });

  it("divides the node's growth from idle by the run pods up", () => {
    const MiB = 1024 * 1024;
    const idle = { kubelet: 80 * MiB, containerd: 60 * MiB, shims: 10 * MiB, shimCount: 1 };
    const loaded = { kubelet: 100 * MiB, containerd: 70 * MiB, shims: 110 * MiB, shimCount: 11 };
    expect(memoryPerPod(idle, loaded, 10)).toEqual({
      kubelet: 2 * MiB,
      containerd: MiB,
      shim: 10 * MiB,
      total: 13 * MiB,
    });
    expect(memoryPerPod(idle, loaded, 0)).toBeUndefined();
  });

  it("reads the agent's exit from the supervisor's lifecycle event, by the runtime's timestamp", () => {
    const log = [
      '2026-12-07T06:00:01.000000000Z {"kind":"lifecycle","phase":"agent","status":"started"}',
      "2026-12-07T06:00:02.000000000Z not json",
      '2026-12-07T06:00:03.250000000Z {"kind":"lifecycle","phase":"agent","status":"succeeded","exitCode":0}',
      '2026-12-07T06:00:04.000000000Z {"kind":"lifecycle","phase":"agent","status":"failed","exitCode":1}',
    ].join("\n");
    expect(agentExitFromLog(log)).toBe(Date.parse("2026-12-07T06:00:03.250Z"));
    expect(agentExitFromLog(log.split("\n").slice(0, 2).join("\n"))).toBeUndefined();
    expect(
      agentExitFromLog('2026-12-07T06:00:05Z {"kind":"lifecycle","phase":"agent","status":"failed"}'),
    ).toBe(Date.parse("2026-12-07T06:00:05Z"));
  });

  it("takes the last container's exit only once every container ended", () => {
    const ended = (at: string) => ({ state: { terminated: { finishedAt: at } } });
    expect(lastContainerExit([ended("2026-12-07T06:00:03Z"), ended("2026-12-07T06:00:05Z")])).toBe(
      Date.parse("2026-12-07T06:00:05Z"),
    );
    expect(lastContainerExit([ended("2026-12-07T06:00:03Z"), { state: {} }])).toBeUndefined();
    expect(lastContainerExit([])).toBeUndefined();
  });

  it("measures each exit to terminal over the runs that saw both", () => {
    const t = exitToTerminal([
      { "agent exited": 4, "last container exited": 4.5, terminal: 7 },
      { "agent exited": 5, terminal: 6 },
      { "agent exited": 5 },
    ]);
    expect(t["agent exited"]).toMatchObject({ n: 2, max: 3 });
    expect(t["last container exited"]).toMatchObject({ n: 1, p50: 2.5 });
  });
});
