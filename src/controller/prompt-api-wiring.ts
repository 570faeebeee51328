/**
 * Wires the realtime prompt API (src/prompt-api) to the Kubernetes API. It runs on every replica,
 * leader or not: the Service may route a caller to either, and the API only forwards, so it reads
 * the Agent, Job and pods straight from the API server instead of the leader's cache.
 */
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { jobPodSelector } from "../core/run-job/names.js";
import type { KubeClient } from "../kube/client.js";
import { AGENTS, JOBS, PODS } from "../kube/resources.js";
import {
  createPromptApi,
  type Forward,
  jsonLogger,
  type PromptApiAgent,
  type PromptApiLogger,
  type PromptApiServer,
  runPodStateFrom,
  startPromptApiServer,
} from "../prompt-api/index.js";
import type { ControllerConfig } from "./config.js";

/** How often a sessionId patch is retried when it races another status write. */
const SESSION_PATCH_ATTEMPTS = 3;

export interface PromptApiWiring {
  config: Pick<ControllerConfig, "namespace" | "realtimeApiToken" | "realtimeSigningKey">;
  client: Pick<KubeClient, "get" | "list" | "patchStatus">;
  forward?: Forward;
  logger?: PromptApiLogger;
}

export function controllerPromptApi(w: PromptApiWiring) {
  const logger = w.logger ?? jsonLogger;
  return createPromptApi<PromptApiAgent>({
    namespace: w.config.namespace,
    apiToken: w.config.realtimeApiToken,
    signingKey: w.config.realtimeSigningKey,
    getAgent: (ns, name) => w.client.get<PromptApiAgent>(AGENTS, ns, name),
    resolveRunPod: async (agent) => {
      const ns = agent.metadata.namespace ?? w.config.namespace;
      const jobName = agent.status?.jobName ?? "";
      const [job, pods] = await Promise.all([
        w.client.get<V1Job>(JOBS, ns, jobName),
        w.client.list<V1Pod>(PODS, ns, { labelSelector: jobPodSelector(jobName) }),
      ]);
      return runPodStateFrom({ job, pods: pods.items });
    },
    patchSessionId: (agent, sessionId) => patchSessionId(w.client, w.config.namespace, agent, sessionId),
    ...(w.forward ? { forward: w.forward } : {}),
    logger,
  });
}

/**
 * Writes status.sessionId of a Running Agent, guarded by the resourceVersion it was read at. A 409
 * means the Agent changed since: it is read again from the API server and the write recomputed from
 * that read (never resent with the refused resourceVersion), a few times at most.
 */
export async function patchSessionId(
  client: Pick<KubeClient, "get" | "patchStatus">,
  defaultNamespace: string,
  agent: PromptApiAgent,
  sessionId: string,
): Promise<void> {
  const ns = agent.metadata.namespace ?? defaultNamespace;
  const name = agent.metadata.name ?? "";
  let current: PromptApiAgent | undefined = agent;
  for (let attempt = 1; attempt <= SESSION_PATCH_ATTEMPTS && current; attempt++) {
    if (current.status?.phase !== "Running" || current.status?.sessionId === sessionId) return;
    const outcome = await client.patchStatus(AGENTS, ns, name, current.metadata.resourceVersion ?? "", {
      sessionId,
    });
    if (outcome !== "conflict") return;
    current = await client.get<PromptApiAgent>(AGENTS, ns, name);
  }
}

export async function startControllerPromptApi(
  w: PromptApiWiring & { port?: number; host?: string },
): Promise<PromptApiServer> {
  return startPromptApiServer(controllerPromptApi(w), { port: w.port, host: w.host });
}
