import { describe, expect, it } from "vitest";
import { memoryPerPod, type RunStages, stageShares, stageTimes } from "./real-node-report.js";

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
});
