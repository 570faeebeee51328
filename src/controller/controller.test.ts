import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import { withoutOutput } from "./controller.js";

describe("withoutOutput (OQ-52)", () => {
  it("drops only status.output from a cached Agent", () => {
    const a = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "a" },
      spec: { stationRef: "s" },
      status: { phase: "Succeeded", exitCode: 0, output: "x".repeat(1000), completedAt: "t" },
    } as Agent;
    expect(withoutOutput(a).status).toEqual({ phase: "Succeeded", exitCode: 0, completedAt: "t" });
    expect(a.status?.output).toHaveLength(1000);
  });

  it("returns an Agent without output unchanged", () => {
    const a = { metadata: { name: "a" }, spec: { stationRef: "s" } } as Agent;
    expect(withoutOutput(a)).toBe(a);
  });
});
