/** Shared setup for the controller's integration tests: in-process replicas on a real API server. */
import type { KubeConfig } from "@kubernetes/client-node";
import { type ControllerConfig, parseConfig } from "../../../src/controller/config.js";
import { ControllerReplica, type ReplicaOptions } from "../../../src/controller/process.js";
import type { Agent } from "../../../src/core/types.js";
import { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, STATIONS } from "../../../src/kube/resources.js";
import { eventually } from "../../harness/eventually.js";

/** Short ticks so tests are fast; the defaults (seed values) are tested in config.test.ts. */
export function testConfig(
  namespace: string,
  podName: string,
  overrides: Partial<ControllerConfig["timings"]> = {},
) {
  return parseConfig(
    { NAMESPACE: namespace, POD_NAME: podName, HEALTH_PORT: "8081" },
    {},
    {
      leaseTickMs: 500,
      leaseDurationMs: 3000,
      pollIntervalMs: 3000,
      watchTimeoutSeconds: 20,
      backoffBaseMs: 100,
      backoffMaxMs: 2000,
      listPageSize: 50,
      ...overrides,
    },
  );
}

export async function clientFor(kc: KubeConfig): Promise<KubeClient> {
  return KubeClient.fromKubeConfig(kc);
}

export async function startReplica(
  client: KubeClient,
  namespace: string,
  podName: string,
  extra: Partial<ReplicaOptions> = {},
  timings: Partial<ControllerConfig["timings"]> = {},
): Promise<ControllerReplica> {
  const r = new ControllerReplica({
    config: testConfig(namespace, podName, timings),
    client,
    noHealthServer: true,
    log: () => {},
    ...extra,
  });
  await r.start();
  return r;
}

export interface StationOpts {
  maxConcurrentRuns?: number;
  concurrencyPolicy?: "Allow" | "Forbid" | "Replace";
  successfulRunsHistoryLimit?: number;
  failedRunsHistoryLimit?: number;
  /** Minutes before the Job's activeDeadlineSeconds (default 30). */
  deadlineMinutes?: number;
  annotations?: Record<string, string>;
  /** Pod template labels. */
  labels?: Record<string, string>;
}

export async function createStation(
  client: KubeClient,
  ns: string,
  name: string,
  def: string,
  o: StationOpts = {},
) {
  const { annotations, labels, ...spec } = o;
  await client.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: def,
      deadlineMinutes: 30,
      ...spec,
      template: {
        metadata: { annotations: annotations ?? {}, ...(labels ? { labels } : {}) },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });
}

export async function createDefinition(client: KubeClient, ns: string, name: string) {
  await client.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name },
    spec: { prompt: "Summarise {topic}.", model: "claude-sonnet-4-5", execution: "interactive" },
  });
}

export async function createAgent(client: KubeClient, ns: string, name: string, station: string) {
  await client.create(AGENTS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name },
    spec: { stationRef: station, parameters: { topic: "tests" } },
  });
}

export async function getAgent(client: KubeClient, ns: string, name: string): Promise<Agent | undefined> {
  return client.get<Agent>(AGENTS, ns, name);
}

export function waitForPhase(
  client: KubeClient,
  ns: string,
  name: string,
  phases: string[],
  timeoutMs?: number,
) {
  return eventually(
    `Agent ${name} in ${phases.join("/")}`,
    async () => {
      const a = await getAgent(client, ns, name);
      return a && phases.includes(a.status?.phase ?? "Pending") ? a : undefined;
    },
    timeoutMs,
  );
}
