/**
 * Shared setup of the end-to-end run-pod tests: the in-process controller (AGENT_IMAGE = the agent
 * image built from the Dockerfile) on the real local API server, Stations whose pods run on the
 * plane's real node (kubelet, containerd, runc; docs/real-node.md), where the image's init, witness
 * and supervisor run a scripted fake CLI from a Station image, and an http listener for the run's
 * sinks on the address pods reach this machine at.
 */
import { readFileSync } from "node:fs";
import { CoreV1Api, type V1Pod, Watch } from "@kubernetes/client-node";
import { parseConfig } from "../../../src/controller/config.js";
import { AgentController } from "../../../src/controller/controller.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import type { Agent } from "../../../src/core/types.js";
import { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, SECRETS, STATIONS } from "../../../src/kube/resources.js";
import { agentSecretsReader, SinkDispatcher } from "../../../src/sinks/index.js";
import {
  agentImage,
  createFakeCliJournal,
  createTestNamespace,
  eventually,
  FAKE_CLI_STATION_IMAGE,
  type FakeCliJournal,
  type FakeCliScript,
  fakeCliEnv,
  kubeConfig,
  podReachableHost,
  realNodePodTemplate,
  realNodeProblem,
} from "../../harness/context.js";
import { type SinkListener, startSinkListener } from "../batch/setup.js";

export const SINK_HEADERS_KEY = "sink-headers";
export const SINK_TOKEN = "Bearer run-pod-sink-token";

/**
 * Why run pods cannot run here ("" when they can): they need the plane's real node (root, the
 * Debian packages). Use as `describe.skipIf(RUN_POD_SKIP)`; the reason is printed by the global setup.
 */
export const RUN_POD_SKIP = realNodeProblem();

export interface RunPodEnv {
  ns: string;
  client: KubeClient;
  listener: SinkListener;
  journal: FakeCliJournal;
  close(): Promise<void>;
}

/** A namespace with `agent-secrets` (sink header plus `secrets`) and a running controller. */
export async function startRunPodEnv(
  prefix: string,
  secrets: Record<string, string> = {},
  /** Extra controller settings, e.g. STUCK_POD_SECONDS. */
  controllerEnv: Record<string, string> = {},
): Promise<RunPodEnv> {
  const client = await KubeClient.fromKubeConfig(kubeConfig());
  const ns = await createTestNamespace(prefix);
  const listener = await startSinkListener(podReachableHost());
  const journal = await createFakeCliJournal(podReachableHost());
  const data: Record<string, string> = { [SINK_HEADERS_KEY]: `Authorization: ${SINK_TOKEN}\n`, ...secrets };
  await client.create(SECRETS, ns, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "agent-secrets" },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  });
  const sinks = new SinkDispatcher({
    readSecretKey: agentSecretsReader((n, name) => client.get(SECRETS, n, name)),
    retry: { attempts: 3, baseMs: 50, maxMs: 200 },
    log: { warn: () => {}, error: () => {}, info: () => {} },
  });
  const controller = new AgentController({
    config: parseConfig(
      { NAMESPACE: ns, POD_NAME: `${prefix}-controller`, AGENT_IMAGE: agentImage(), ...controllerEnv },
      // AGENT_GATEWAY_CREDENTIAL_KEY_FILE names a file, as in the controller's pod.
      { readFile: (path) => readFileSync(path) },
      {
        pollIntervalMs: 1000,
        watchTimeoutSeconds: 30,
        backoffBaseMs: 100,
        backoffMaxMs: 1000,
        listPageSize: 100,
      },
    ),
    client,
    metrics: new ControllerMetrics(),
    sinks,
    log: process.env.RUN_POD_TEST_LOG ? (m) => console.log(`[${prefix}] ${m}`) : () => {},
  });
  await controller.start();
  return {
    ns,
    client,
    listener,
    journal,
    close: async () => {
      await controller.stop();
      await sinks.drain(5000);
      await listener.close();
      await client.close();
      await journal.remove();
    },
  };
}

export async function createDefinition(
  env: RunPodEnv,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await env.client.create(AGENT_DEFINITIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name },
    spec: { prompt: "Summarise {topic}.", execution: "interactive", ...spec },
  });
}

/**
 * A Station whose pods run on the real node with the fake CLI following `script`; `sidecars` are
 * extra containers of the template, kept as they are by the controller.
 */
export async function createStation(
  env: RunPodEnv,
  name: string,
  definition: string,
  script: FakeCliScript,
  spec: Record<string, unknown> = {},
  sidecars: Record<string, unknown>[] = [],
): Promise<void> {
  await env.client.create(STATIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: definition,
      deadlineMinutes: 5,
      ...spec,
      template: {
        spec: {
          ...realNodePodTemplate(),
          containers: [
            { name: "agent", image: FAKE_CLI_STATION_IMAGE, env: fakeCliEnv(script, env.journal) },
            ...sidecars,
          ],
        },
      },
    },
  });
}

export async function createAgent(
  env: RunPodEnv,
  name: string,
  station: string,
  spec: Record<string, unknown> = {},
): Promise<void> {
  await env.client.create(AGENTS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name },
    spec: { stationRef: station, parameters: { topic: "tests" }, ...spec },
  });
}

/** The Agent once it is Succeeded or Failed. */
export function finishedAgent(env: RunPodEnv, name: string, timeoutMs = 90_000): Promise<Agent> {
  return eventually(
    `Agent ${name} Succeeded or Failed`,
    async () => {
      const agent = await env.client.get<Agent>(AGENTS, env.ns, name);
      const phase = agent?.status?.phase;
      return phase === "Succeeded" || phase === "Failed" ? agent : undefined;
    },
    timeoutMs,
    250,
  );
}

/**
 * Every phase an Agent goes through, from a watch started before it is created (so the first
 * version, with no status yet, counts as Pending). Call before createAgent; await `terminal`.
 */
export async function watchPhases(
  env: RunPodEnv,
  name: string,
  timeoutMs = 90_000,
): Promise<{ terminal: Promise<string[]> }> {
  const seen: string[] = [];
  let finish: (phases: string[]) => void = () => {};
  let fail: (err: Error) => void = () => {};
  const terminal = new Promise<string[]>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const request = await new Watch(kubeConfig()).watch(
    `/apis/agents.re-cinq.com/v1beta1/namespaces/${env.ns}/agents`,
    { fieldSelector: `metadata.name=${name}` },
    (_type: string, obj: Agent) => {
      const phase = obj.status?.phase ?? "Pending";
      if (seen.at(-1) !== phase) seen.push(phase);
      if (phase === "Succeeded" || phase === "Failed") finish(seen);
    },
    (err: unknown) => {
      if (err) fail(new Error(`watching Agent ${name}: ${String(err)}; phases so far: ${seen.join(" → ")}`));
    },
  );
  const timer = setTimeout(
    () =>
      fail(new Error(`Agent ${name} not terminal after ${timeoutMs / 1000} s; phases: ${seen.join(" → ")}`)),
    timeoutMs,
  );
  return {
    terminal: terminal.finally(() => {
      clearTimeout(timer);
      request.abort();
    }),
  };
}

/** The log of one container of the Agent's pod. */
export async function podLog(env: RunPodEnv, agent: Agent, container: string): Promise<string> {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({
    namespace: env.ns,
    labelSelector: `job-name=${agent.status?.jobName}`,
  });
  const name = pods.items[0]?.metadata?.name ?? "";
  return core.readNamespacedPodLog({ namespace: env.ns, name, container, tailLines: 10000 });
}

/** The Agent's pod (the first pod of its Job). */
export async function runPod(env: RunPodEnv, agentName: string): Promise<V1Pod | undefined> {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({
    namespace: env.ns,
    labelSelector: `agents.re-cinq.com/agent=${agentName}`,
  });
  return pods.items[0];
}
