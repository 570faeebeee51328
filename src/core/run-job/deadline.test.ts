import { describe, expect, it } from "vitest";
import { agent, definition, station } from "../../../test/support/core-builders.js";
import { build, container, envOf, settings } from "../../../test/support/job-build.js";
import { deadlineBudget } from "./deadline.js";
import { buildJob } from "./job.js";

describe("deadlines (docs/run-pod.md#deadlines)", () => {
  it.each([
    [30, false, { agentMs: 1_770_000, tailMs: 30_000, courierMs: 0, shared: false }],
    [30, true, { agentMs: 1_650_000, tailMs: 30_000, courierMs: 120_000, shared: false }],
    [1, false, { agentMs: 30_000, tailMs: 30_000, courierMs: 0, shared: false }],
    // The margins (150 s) would leave nothing: the agent gets half, the margins share the rest.
    [2, true, { agentMs: 60_000, tailMs: 12_000, courierMs: 48_000, shared: true }],
    [1, true, { agentMs: 30_000, tailMs: 6000, courierMs: 24_000, shared: true }],
  ] as const)("deadlineMinutes %s, delivery %s", (minutes, delivery, want) => {
    expect(deadlineBudget(minutes, delivery)).toEqual({ jobMs: minutes * 60_000, ...want });
  });

  it("every share is positive and they add up to the Job's deadline", () => {
    for (let minutes = 1; minutes <= 600; minutes++) {
      for (const delivery of [false, true]) {
        const b = deadlineBudget(minutes, delivery);
        expect(b.agentMs + b.tailMs + b.courierMs).toBe(b.jobMs);
        expect(b.agentMs).toBeGreaterThanOrEqual(b.jobMs / 2);
        expect(b.tailMs).toBeGreaterThan(0);
        if (delivery) expect(b.courierMs).toBeGreaterThan(0);
      }
    }
  });

  it("a 2-minute Station with delivery leaves a short run a minute, not 1 s", () => {
    const env = envOf(
      container(
        build({
          stationSpec: { deadlineMinutes: 2 },
          def: { delivery: { pullRequest: { tokenSecret: "forge-token" } } },
        }),
        "agent",
      ),
    );
    expect(env.AGENT_DEADLINE_MS).toBe("60000");
    expect(env.AGENT_TAIL_MS).toBe("12000");
  });

  it("given the creation time, the supervisor and the courier get the deadline on the Job's clock; the init does not", () => {
    const createdAt = Date.UTC(2026, 11, 2, 4, 0, 0);
    const built = buildJob(
      agent("run-1").build(),
      station().build(),
      definition()
        .spec({ delivery: { pullRequest: { tokenSecret: "forge-token" } } })
        .build(),
      settings,
      "interactive",
      createdAt,
    );
    if (!built.ok) throw new Error(built.reason);
    for (const name of ["agent", "courier"]) {
      expect(envOf(container(built.job, name)), name).toMatchObject({
        AGENT_DEADLINE_MS: "1650000",
        AGENT_DEADLINE_AT: String(createdAt + 1_650_000),
        AGENT_TAIL_MS: "30000",
      });
    }
    expect(envOf(container(built.job, "init")).AGENT_DEADLINE_AT).toBeUndefined();
  });
});
