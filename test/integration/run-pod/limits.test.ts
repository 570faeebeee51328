/**
 * End to end, the two slow cases, run side by side (about a minute of wall time, bounded by the
 * Job's 60 s activeDeadlineSeconds): the supervisor's deadline (deadlineMinutes 1 ⇒
 * AGENT_DEADLINE_MS 30 s) ends a sleeping agent with 124, and a missing `agent-secrets` key keeps
 * the init container waiting with the kubelet's CreateContainerConfigError until the Job's
 * deadline fails the run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  RUN_POD_PROGRAMS_BUILT,
  type RunPodEnv,
  runPod,
  startRunPodEnv,
} from "./setup.js";

let env: RunPodEnv;
beforeAll(async () => {
  if (RUN_POD_PROGRAMS_BUILT) env = await startRunPodEnv("run-pod-limits");
});
afterAll(async () => {
  await env?.close();
});

describe.skipIf(!RUN_POD_PROGRAMS_BUILT)("run limits", () => {
  it.concurrent("the supervisor's deadline ends a sleeping agent with exit code 124", async () => {
    await createDefinition(env, "def-sleep", { model: "claude-sonnet-4-5" });
    await createStation(env, "stn-sleep", "def-sleep", { durationMs: 600_000 }, { deadlineMinutes: 1 });
    await createAgent(env, "sleeper", "stn-sleep");
    const agent = await finishedAgent(env, "sleeper", 120_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.exitCode).toBe(124);
  });

  it.concurrent("a missing agent-secrets key keeps the init waiting with CreateContainerConfigError", async () => {
    await createDefinition(env, "def-secret", {
      model: "claude-sonnet-4-5",
      resources: { secrets: [{ name: "API_KEY", ref: "absent-key" }] },
    });
    await createStation(env, "stn-secret", "def-secret", {}, { deadlineMinutes: 1 });
    await createAgent(env, "no-key", "stn-secret");
    const waiting = await eventually("init waiting with CreateContainerConfigError", async () => {
      const w = (await runPod(env, "no-key"))?.status?.initContainerStatuses?.[0]?.state?.waiting;
      return w?.reason === "CreateContainerConfigError" ? w : undefined;
    });
    expect(waiting.message).toBe(`couldn't find key absent-key in Secret ${env.ns}/agent-secrets`);
    expect((await runPod(env, "no-key"))?.status?.phase).toBe("Pending");
    // The controller leaves such a pod to the Job's deadline (OQ-22 is not implemented).
    const agent = await finishedAgent(env, "no-key", 120_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.failureReason).toContain("DeadlineExceeded");
    expect(env.journal.entries().some((e) => e.env.AGENT_NAME === "no-key")).toBe(false);
  });
});
