import { BatchV1Api, CoreV1Api, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createTestNamespace,
  eventually,
  kubeConfig,
  podScriptAnnotations,
  scriptPods,
  setPodLogs,
} from "../../harness/context.js";
import { SCRIPT_RULE_LABEL, SCRIPTED_ANNOTATION } from "../../harness/pod-script.js";

// The shape of an agent run pod: init container `init`, main `agent`, optional `courier`.
function runJob(name: string, annotations: Record<string, string> = {}, courier = false): V1Job {
  const containers = [{ name: "agent", image: "agent.invalid/agent" }];
  if (courier) containers.push({ name: "courier", image: "agent.invalid/courier" });
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { annotations, labels: { "test.example/run": name } },
        spec: {
          restartPolicy: "Never",
          initContainers: [{ name: "init", image: "agent.invalid/init" }],
          containers,
        },
      },
    },
  };
}

describe("kwok-run Job pods follow the test's script", () => {
  let ns: string;
  const core = () => kubeConfig().makeApiClient(CoreV1Api);
  const batch = () => kubeConfig().makeApiClient(BatchV1Api);

  beforeAll(async () => {
    ns = await createTestNamespace("harness-pods");
  });

  async function finishedPod(job: string): Promise<V1Pod> {
    return eventually(`a finished pod of Job ${job}`, async () => {
      const pods = await core().listNamespacedPod({ namespace: ns, labelSelector: `job-name=${job}` });
      const pod = pods.items[0];
      return pod?.status?.phase === "Succeeded" || pod?.status?.phase === "Failed" ? pod : undefined;
    });
  }

  const exitCodeOf = (pod: V1Pod, container: string) =>
    [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find(
      (s) => s.name === container,
    )?.state?.terminated?.exitCode;

  it("ends Succeeded with exit code 0 when nothing is chosen, and the Job completes", async () => {
    await batch().createNamespacedJob({ namespace: ns, body: runJob("plain") });
    const pod = await finishedPod("plain");
    expect(pod.status?.phase).toBe("Succeeded");
    expect(exitCodeOf(pod, "agent")).toBe(0);
    expect(exitCodeOf(pod, "init")).toBe(0);
    await eventually("Job plain Complete", async () => {
      const job = await batch().readNamespacedJob({ name: "plain", namespace: ns });
      return job.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True");
    });
  });

  it("ends Failed with the exit code chosen through pod-template annotations, and the Job fails", async () => {
    await batch().createNamespacedJob({
      namespace: ns,
      body: runJob("fails", podScriptAnnotations({ exitCode: 3, exitCodes: { courier: 0 } }), true),
    });
    const pod = await finishedPod("fails");
    expect(pod.status?.phase).toBe("Failed");
    expect(exitCodeOf(pod, "agent")).toBe(3);
    expect(exitCodeOf(pod, "courier")).toBe(0);
    expect(exitCodeOf(pod, "init")).toBe(0);
    await eventually("Job fails Failed", async () => {
      const job = await batch().readNamespacedJob({ name: "fails", namespace: ns });
      return job.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True");
    });
  });

  it("fails the pod in its init container without running the main containers", async () => {
    await scriptPods(ns, { "job-name": "init-fails" }, { exitCodes: { init: 2 } });
    await batch().createNamespacedJob({ namespace: ns, body: runJob("init-fails") });
    const pod = await finishedPod("init-fails");
    expect(pod.status?.phase).toBe("Failed");
    expect(exitCodeOf(pod, "init")).toBe(2);
    const agent = pod.status?.containerStatuses?.find((s) => s.name === "agent");
    expect(agent?.state?.terminated).toBeUndefined();
    expect(agent?.state?.waiting?.reason).toBe("PodInitializing");
  });

  it("keeps the pod Running for the chosen run time before it ends", async () => {
    await scriptPods(ns, { "job-name": "slow" }, { runTime: "4s", exitCode: 0 });
    await batch().createNamespacedJob({ namespace: ns, body: runJob("slow") });
    const running = await eventually("pod of Job slow Running", async () => {
      const pods = await core().listNamespacedPod({ namespace: ns, labelSelector: "job-name=slow" });
      const pod = pods.items[0];
      return pod?.status?.phase === "Running" && pod.metadata?.annotations?.["harness.test.example/finish"]
        ? pod
        : undefined;
    });
    const done = await finishedPod("slow");
    expect(done.status?.phase).toBe("Succeeded");
    const started = Date.parse(String(running.status?.startTime));
    const finished = Date.parse(String(done.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt));
    // A lower bound only (kwok cannot end it earlier); both stamps have second precision.
    expect(finished - started).toBeGreaterThanOrEqual(3000);
  });

  it("serves each container's configured log through the pods/log API, set before the pod existed", async () => {
    await setPodLogs(
      ns,
      { "job-name": "logs" },
      {
        init: ["init/started", "init/succeeded"],
        agent: ['{"type":"result","result":"done"}', "last line"],
        courier: ['{"type":"delivery","url":"https://example.invalid/pr/1"}'],
      },
    );
    await batch().createNamespacedJob({ namespace: ns, body: runJob("logs", {}, true) });
    const pod = await finishedPod("logs");
    const read = (container: string) =>
      core().readNamespacedPodLog({ name: pod.metadata?.name ?? "", namespace: ns, container });
    expect(await read("agent")).toBe('{"type":"result","result":"done"}\nlast line\n');
    expect(await read("courier")).toBe('{"type":"delivery","url":"https://example.invalid/pr/1"}\n');
    expect(await read("init")).toBe("init/started\ninit/succeeded\n");
    const tail = await core().readNamespacedPodLog({
      name: pod.metadata?.name ?? "",
      namespace: ns,
      container: "agent",
      tailLines: 1,
    });
    expect(tail).toBe("last line\n");
  });

  it("serves a log given as a pod-template annotation, and an empty log for containers without one", async () => {
    await batch().createNamespacedJob({
      namespace: ns,
      body: runJob("annotated-logs", podScriptAnnotations({ logs: { agent: "from the template" } })),
    });
    const pod = await finishedPod("annotated-logs");
    const name = pod.metadata?.name ?? "";
    expect(await core().readNamespacedPodLog({ name, namespace: ns, container: "agent" })).toBe(
      "from the template\n",
    );
    expect(await core().readNamespacedPodLog({ name, namespace: ns, container: "init" })).toBe("");
  });
});

describe("a pod whose scripting failed once is scripted when the cause goes away", () => {
  it("retries without any new event on the pod (resync), so the run ends", async () => {
    // A broken rule makes the scripter fail on the pod; once the pod is Running under kwok nothing
    // else changes it, so only the scripter's own resync can pick it up again.
    const ns = await createTestNamespace("harness-resync");
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const rule = "pod-script-broken";
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: rule, labels: { [SCRIPT_RULE_LABEL]: "true" } },
        data: { order: "1", matchLabels: '{"test.example/run":"resync"}', script: "{not json" },
      },
    });
    await kubeConfig()
      .makeApiClient(BatchV1Api)
      .createNamespacedJob({ namespace: ns, body: runJob("resync") });
    const running = await eventually("the resync pod Running, unscripted", async () => {
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: "job-name=resync" });
      const pod = pods.items[0];
      return pod?.status?.phase === "Running" ? pod : undefined;
    });
    expect(running.metadata?.annotations?.[SCRIPTED_ANNOTATION]).toBeUndefined();
    await core.replaceNamespacedConfigMap({
      name: rule,
      namespace: ns,
      body: {
        metadata: { name: rule, labels: { [SCRIPT_RULE_LABEL]: "true" } },
        data: { order: "1", matchLabels: '{"test.example/run":"resync"}', script: '{"exitCode":4}' },
      },
    });
    const ended = await eventually("the resync pod ended", async () => {
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: "job-name=resync" });
      const pod = pods.items[0];
      return pod?.status?.phase === "Failed" || pod?.status?.phase === "Succeeded" ? pod : undefined;
    });
    expect(ended.status?.phase).toBe("Failed");
    expect(
      ended.status?.containerStatuses?.find((s) => s.name === "agent")?.state?.terminated?.exitCode,
    ).toBe(4);
  });
});
