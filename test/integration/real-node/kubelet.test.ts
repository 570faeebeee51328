/**
 * What only a real kubelet shows (docs/real-node.md): the run pod exactly as the controller builds
 * it, on the plane's real node (kubelet, containerd, runc) from the agent image built from the
 * Dockerfile: the image's reaper found, a memory limit enforced by the kernel, an image the node
 * does not have, an Agent deleted mid-run, and the kubelet itself restarted mid-run.
 */
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { msgOomKilled } from "../../../src/core/readback/readback.js";
import type { Agent } from "../../../src/core/types.js";
import { AGENTS, JOBS, STATIONS } from "../../../src/kube/resources.js";
import type { FakeCliScript } from "../../fakes/cli/script.js";
import {
  agentImage,
  eventually,
  eventuallyPasses,
  FAKE_CLI_STATION_IMAGE,
  fakeCliEnv,
  kubeConfig,
  REAL_NODE,
  realNodePodTemplate,
  restartRealKubelet,
} from "../../harness/context.js";
import {
  createAgent,
  createDefinition,
  finishedAgent,
  podLog,
  RUN_POD_SKIP,
  type RunPodEnv,
  runPod,
  startRunPodEnv,
} from "../run-pod/setup.js";

let env: RunPodEnv;
let core: CoreV1Api;

beforeAll(async () => {
  if (RUN_POD_SKIP !== "") return;
  // A stuck pod is given up on after 5 s here instead of 5 minutes.
  env = await startRunPodEnv("real-kubelet", {}, { STUCK_POD_SECONDS: "5" });
  core = kubeConfig().makeApiClient(CoreV1Api);
  await createDefinition(env, "def", { model: "claude-sonnet-4-6" });
});
afterAll(async () => {
  await env?.close();
});

/** A Station on the real node whose agent container is `agent` merged over the fake-CLI one. */
async function station(
  name: string,
  script: FakeCliScript,
  agent: Record<string, unknown> = {},
): Promise<void> {
  await env.client.create(STATIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: "def",
      deadlineMinutes: 5,
      template: {
        spec: {
          ...realNodePodTemplate(),
          containers: [
            { name: "agent", image: FAKE_CLI_STATION_IMAGE, env: fakeCliEnv(script, env.journal), ...agent },
          ],
        },
      },
    },
  });
}

function agentContainerRunning(name: string): Promise<V1Pod> {
  return eventually(
    `the agent container of ${name} running`,
    async () => {
      const pod = await runPod(env, name);
      return pod?.status?.containerStatuses?.find((c) => c.name === "agent")?.state?.running
        ? pod
        : undefined;
    },
    90_000,
  );
}

describe.skipIf(RUN_POD_SKIP !== "")("run pods on a real kubelet", () => {
  it.concurrent("a run succeeds from the agent image as the controller builds it, its reaper found", async () => {
    await station("plain", { answer: "Fixed on a real kubelet." });
    await createAgent(env, "plain", "plain");
    const agent = await finishedAgent(env, "plain");
    expect(agent.status?.phase).toBe("Succeeded");
    expect(agent.status?.output).toContain("Fixed on a real kubelet.");
    const pod = await runPod(env, "plain");
    expect(pod?.spec?.nodeName).toBe(REAL_NODE.nodeName);
    expect(pod?.status?.podIP).toMatch(/^10\.213\.0\./);
    // Nothing of the harness in the pod: no host path, only the images named as built.
    expect(pod?.spec?.volumes?.some((v) => v.hostPath !== undefined)).toBe(false);
    const images = [...(pod?.spec?.initContainers ?? []), ...(pod?.spec?.containers ?? [])].map(
      (c) => c.image,
    );
    expect(new Set(images)).toEqual(new Set([agentImage(), FAKE_CLI_STATION_IMAGE]));
    // The supervisor says so when the image lacks the reaper; the agent image has it.
    expect(await podLog(env, agent, "agent")).not.toContain("orphaned processes are not reaped");
  });

  it.concurrent("a template the Station allowlist accepts runs as written: nulls dropped, env from a ConfigMap and agent-secrets, a Station volume beside the run's", async () => {
    await core.createNamespacedConfigMap({
      namespace: env.ns,
      body: { metadata: { name: "station-settings" }, data: { region: "eu-west" } },
    });
    await env.client.create(STATIONS, env.ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name: "allowed" },
      spec: {
        agentDefRef: "def",
        deadlineMinutes: 5,
        template: {
          spec: {
            ...realNodePodTemplate(),
            nodeName: null,
            volumes: [{ name: "cache", configMap: null, emptyDir: { sizeLimit: "16Mi" } }],
            containers: [
              {
                name: "agent",
                image: FAKE_CLI_STATION_IMAGE,
                env: [
                  ...fakeCliEnv({ answer: "Allowed." }, env.journal),
                  {
                    name: "STATION_REGION",
                    valueFrom: { configMapKeyRef: { name: "station-settings", key: "region" } },
                  },
                ],
                envFrom: [{ secretRef: { name: "agent-secrets" }, prefix: "S_" }],
                volumeMounts: [{ name: "cache", mountPath: "/cache" }],
              },
            ],
          },
        },
      },
    });
    await createAgent(env, "allowed", "allowed");
    const agent = await finishedAgent(env, "allowed");
    expect(agent.status?.failureReason).toBeUndefined();
    expect(agent.status?.phase).toBe("Succeeded");
    const invocation = env.journal.entries().find((e) => e.env.AGENT_NAME === "allowed");
    expect(invocation?.env.STATION_REGION).toBe("eu-west");
    const pod = await runPod(env, "allowed");
    expect(pod?.spec?.volumes?.find((v) => v.name === "cache")).toEqual({
      name: "cache",
      emptyDir: { sizeLimit: "16Mi" },
    });
    expect(pod?.spec?.containers.find((c) => c.name === "agent")?.volumeMounts).toContainEqual(
      expect.objectContaining({ name: "cache", mountPath: "/cache" }),
    );
  });

  it.concurrent("orphans the CLI leaves are reaped by the pod's PID 1 (the image's reaper): no zombies", async () => {
    await station("orphans", { countZombies: true });
    await createAgent(env, "orphans", "orphans");
    const agent = await finishedAgent(env, "orphans");
    expect(agent.status?.phase).toBe("Succeeded");
    expect(agent.status?.output).toContain("zombies: 0");
  });

  it.concurrent("the agent container past its memory limit: the kernel kills it and the Agent fails saying so", async () => {
    await station("hog", { hogMemory: true }, { resources: { limits: { memory: "160Mi" } } });
    await createAgent(env, "hog", "hog");
    const agent = await finishedAgent(env, "hog", 120_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.failureReason).toBe(msgOomKilled(137));
  });

  it.concurrent.each([
    [
      "Never",
      /^ErrImageNeverPull: Container image "station\.invalid\/none:1" is not present with pull policy of Never$/,
    ],
    ["IfNotPresent", /^(ErrImagePull|ImagePullBackOff): .*station\.invalid\/none:1/],
  ])(
    "an image the node does not have (pull policy %s): the stuck-pod failure with the kubelet's words, the Job deleted",
    async (policy, reason) => {
      const name = `no-image-${policy.toLowerCase()}`;
      await station(name, {}, { image: "station.invalid/none:1", imagePullPolicy: policy });
      await createAgent(env, name, name);
      const agent = await finishedAgent(env, name, 120_000);
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.failureReason).toMatch(reason);
      await eventually("the stuck run's Job deleted", async () =>
        (await env.client.get(JOBS, env.ns, agent.status?.jobName ?? "")) === undefined ? true : undefined,
      );
    },
  );

  it.concurrent("an Agent deleted mid-run: the kubelet stops its pod and the Job goes", async () => {
    await station("doomed", { durationMs: 600_000 });
    await createAgent(env, "doomed", "doomed");
    const running = await agentContainerRunning("doomed");
    const jobName = running.metadata?.labels?.["job-name"] ?? "";
    expect(jobName).not.toBe("");
    await env.client.delete(AGENTS, env.ns, "doomed", {});
    await eventually(
      "the pod deleted by the kubelet",
      async () => ((await runPod(env, "doomed")) === undefined ? true : undefined),
      90_000,
    );
    await eventually("the Job deleted", async () =>
      (await env.client.get(JOBS, env.ns, jobName)) === undefined ? true : undefined,
    );
    expect(await env.client.get<Agent>(AGENTS, env.ns, "doomed")).toBeUndefined();
  });
});

// The controller's stuck-pod bound (5 min by default) is longer than this Station's deadline: the
// Job's activeDeadlineSeconds, as the Job controller and the kubelet apply it, ends the run first.
describe.skipIf(RUN_POD_SKIP !== "")("the Job's activeDeadlineSeconds", () => {
  let slow: RunPodEnv;
  beforeAll(async () => {
    slow = await startRunPodEnv("real-job-deadline");
    await createDefinition(slow, "def", { model: "claude-sonnet-4-6" });
  });
  afterAll(async () => {
    await slow?.close();
  });

  it("a run pod that never starts fails at the Station's deadline with the Job's DeadlineExceeded", async () => {
    await slow.client.create(STATIONS, slow.ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name: "never" },
      spec: {
        agentDefRef: "def",
        deadlineMinutes: 1,
        template: {
          spec: {
            ...realNodePodTemplate(),
            containers: [{ name: "agent", image: "station.invalid/none:1", imagePullPolicy: "IfNotPresent" }],
          },
        },
      },
    });
    const started = Date.now();
    await createAgent(slow, "never", "never");
    const agent = await finishedAgent(slow, "never", 180_000);
    expect(agent.status?.phase).toBe("Failed");
    expect(agent.status?.failureReason).toMatch(/^DeadlineExceeded: /);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55_000);
    await eventually(
      "the pod gone",
      async () => ((await runPod(slow, "never")) === undefined ? true : undefined),
      90_000,
    );
  });
});

// Not concurrent: the kubelet goes away for every pod on the node.
describe.skipIf(RUN_POD_SKIP !== "")("the kubelet restarted mid-run", () => {
  it("the run completes; nothing hangs", async () => {
    await station("survivor", { answer: "Finished across a kubelet restart.", durationMs: 12_000 });
    await createAgent(env, "survivor", "survivor");
    await agentContainerRunning("survivor");
    await restartRealKubelet(3000);
    const agent = await finishedAgent(env, "survivor", 150_000);
    expect(agent.status?.phase).toBe("Succeeded");
    expect(agent.status?.output).toContain("Finished across a kubelet restart.");
    // The restarted kubelet posts the node's status on its own beat, not with the pod's.
    await eventuallyPasses("the real node Ready", async () => {
      const node = await core.readNode({ name: REAL_NODE.nodeName });
      expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    });
  });
});
