/**
 * End to end, the two slow cases, run side by side (about 30 s of wall time): the supervisor's
 * deadline (deadlineMinutes 1 ⇒ AGENT_DEADLINE_MS 30 s) ends a sleeping agent with 124, and a
 * missing `agent-secrets` key keeps the init container waiting with the kubelet's
 * CreateContainerConfigError until the controller gives up on the pod (docs/decisions.md D-22; STUCK_POD_SECONDS
 * is 5 s here instead of 5 minutes): the Agent fails with the kubelet's reason and its Job is deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOBS } from "../../../src/kube/resources.js";
import { eventually } from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  createStation,
  finishedAgent,
  RUN_POD_SKIP,
  type RunPodEnv,
  runPod,
  startRunPodEnv,
} from "./setup.js";

let env: RunPodEnv;
beforeAll(async () => {
  if (RUN_POD_SKIP === "") env = await startRunPodEnv("run-pod-limits", {}, { STUCK_POD_SECONDS: "5" });
});
afterAll(async () => {
  await env?.close();
});

describe.skipIf(RUN_POD_SKIP !== "")("run limits", () => {
  it.concurrent("the supervisor's deadline ends a sleeping agent with exit code 124", async () => {
    await createDefinition(env, "def-sleep", { model: "claude-sonnet-4-5" });
    await createStation(env, "stn-sleep", "def-sleep", { durationMs: 600_000 }, { deadlineMinutes: 1 });
    await createAgent(env, "sleeper", "stn-sleep");
    const agent = await finishedAgent(env, "sleeper", 120_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.exitCode).toBe(124);
  });

  it.concurrent("a missing agent-secrets key: the init waits with CreateContainerConfigError until the controller fails the run with it and deletes the Job (docs/decisions.md D-22)", async () => {
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
    const agent = await finishedAgent(env, "no-key", 120_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.exitCode).toBe(1);
    expect(agent.status?.failureReason).toBe(
      `CreateContainerConfigError: couldn't find key absent-key in Secret ${env.ns}/agent-secrets`,
    );
    await eventually("the stuck run's Job is deleted", async () =>
      (await env.client.get(JOBS, env.ns, agent.status?.jobName ?? "")) === undefined ? true : undefined,
    );
    expect(env.journal.entries().some((e) => e.env.AGENT_NAME === "no-key")).toBe(false);
  });
});
