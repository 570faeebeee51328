import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { cpuPerPollCycle, deploymentNodeOptions, type ProbeStats, ROOT } from "./lib.js";

describe("deploymentNodeOptions: the bench runs the controller with the Deployment's flags", () => {
  it("is the controller container's NODE_OPTIONS in deploy/base", () => {
    const doc = parse(readFileSync(join(ROOT, "deploy/base/controller-deployment.yaml"), "utf8"));
    const env = doc.spec.template.spec.containers[0].env as { name: string; value?: string }[];
    const value = env.find((e) => e.name === "NODE_OPTIONS")?.value;
    expect(value).toBeTruthy();
    expect(deploymentNodeOptions()).toBe(value);
  });
});

describe("cpuPerPollCycle", () => {
  const stats = (starts: [number, number][]): ProbeStats =>
    ({ agentListStarts: starts.map(([at, cpuSeconds]) => ({ at, cpuSeconds })) }) as ProbeStats;

  it("divides the CPU between the first and last poll start in the window by the cycles between them", () => {
    // Starts at 0 (outside), 10 s, 25 s, 40 s, 70 s (outside).
    const s = stats([
      [0, 1],
      [10_000, 2],
      [25_000, 2.5],
      [40_000, 3.2],
      [70_000, 9],
    ]);
    const r = cpuPerPollCycle(s, 5_000, 60_000);
    expect(r?.cycles).toBe(2);
    expect(r?.cpuSeconds).toBeCloseTo(0.6, 9);
    expect(r?.cycleSeconds).toBe(15);
  });

  it("is undefined when the window holds fewer than two starts", () => {
    expect(cpuPerPollCycle(stats([[10_000, 2]]), 0, 60_000)).toBeUndefined();
  });
});
