/**
 * Builds the reconcile core's input for one Agent from the shared cache, reading the API server
 * only for what the cache cannot answer safely:
 * - a Station or AgentDefinition missing from the cache is confirmed with a GET before the core
 *   may fail the Agent for it (the Agent and Station watches are separate streams, so a freshly
 *   created Station can lag behind the Agent that names it);
 * - a Job missing from the cache is confirmed with a GET (a 404 there means garbage-collected);
 * - the pod and its logs are read only once the Job has finished (one LIST by job-name, one log
 *   read per container needed).
 */
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import type {
  BatchMemory,
  ControllerSettings,
  JobObservation,
  PodObservation,
  ReconcileInput,
} from "../core/input.js";
import { jobNameFor } from "../core/names.js";
import { jobState } from "../core/readback.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import type { KubeClient } from "./kube/client.js";
import { AGENT_DEFINITIONS, JOBS, PODS, STATIONS } from "./kube/resources.js";

export interface CacheView {
  agent(name: string): Agent | undefined;
  station(name: string): Station | undefined;
  definition(name: string): AgentDefinition | undefined;
  job(name: string): V1Job | undefined;
  stationAgents(station: string): Agent[];
}

export interface GatherDeps {
  cache: CacheView;
  client: Pick<KubeClient, "get" | "list" | "readLog">;
  namespace: string;
  settings: ControllerSettings;
  pendingCreations: (station: string) => string[];
  batch: (uid: string) => BatchMemory;
  now: () => number;
}

/** Lines of the agent log read back (runtime.md §12). */
export const LOG_TAIL_LINES = 10000;

export function toJobObservation(job: V1Job | undefined): JobObservation {
  if (!job) return { found: false };
  const owner = job.metadata?.ownerReferences?.find((r) => r.controller);
  return {
    found: true,
    ...(owner?.uid ? { ownerUid: owner.uid } : {}),
    status: {
      conditions: (job.status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        ...(c.reason ? { reason: c.reason } : {}),
        ...(c.message ? { message: c.message } : {}),
      })),
      ...(job.status?.succeeded !== undefined ? { succeeded: job.status.succeeded } : {}),
      ...(job.status?.failed !== undefined ? { failed: job.status.failed } : {}),
    },
  };
}

/** True when this Agent's outcome comes from a Job the core needs to see. */
export function needsJob(agent: Agent): boolean {
  const s = agent.status;
  if (s?.phase !== "Running" || agent.metadata.deletionTimestamp) return false;
  return !s.batchId || (s.batchFallback === true && !!s.jobName);
}

export async function gather(agent: Agent, d: GatherDeps): Promise<ReconcileInput> {
  const ns = d.namespace;
  let station = d.cache.station(agent.spec.stationRef);
  if (!station) station = await d.client.get<Station>(STATIONS, ns, agent.spec.stationRef);
  let definition: AgentDefinition | undefined;
  if (station) {
    const defName = station.spec.agentDefRef;
    definition =
      d.cache.definition(defName) ?? (await d.client.get<AgentDefinition>(AGENT_DEFINITIONS, ns, defName));
  }

  const input: ReconcileInput = {
    agent,
    station,
    definition,
    stationAgents: d.cache.stationAgents(agent.spec.stationRef),
    pendingCreations: d.pendingCreations(agent.spec.stationRef),
    batch: { ...d.batch(agent.metadata.uid ?? "") },
    settings: d.settings,
    now: d.now(),
  };

  if (needsJob(agent)) {
    const jobName = agent.status?.jobName || jobNameFor(agent.metadata.name ?? "");
    const job = d.cache.job(jobName) ?? (await d.client.get<V1Job>(JOBS, ns, jobName));
    input.job = toJobObservation(job);
    const state = jobState(input.job).state;
    if (state === "succeeded" || state === "failed") {
      input.pod = await readPod(d, jobName, !!definition?.spec.delivery?.pullRequest);
    }
  }
  return input;
}

async function readPod(d: GatherDeps, jobName: string, withCourier: boolean): Promise<PodObservation> {
  // A failed LIST says nothing about the pod: it throws, and the reconcile is retried, rather than
  // reading as "pod garbage-collected" and ending the run without its output.
  const pods = (await d.client.list<V1Pod>(PODS, d.namespace, { labelSelector: `job-name=${jobName}` }))
    .items;
  // Oldest first, so "the first pod" is stable across reads.
  pods.sort((a, b) =>
    String(a.metadata?.creationTimestamp ?? "").localeCompare(String(b.metadata?.creationTimestamp ?? "")),
  );
  const pod = pods[0];
  const name = pod?.metadata?.name;
  if (!pod || !name) return { found: false };
  const agentLog = await d.client.readLog(d.namespace, name, "agent", LOG_TAIL_LINES);
  const obs: PodObservation = {
    found: true,
    ...(pod.status?.containerStatuses ? { containerStatuses: pod.status.containerStatuses } : {}),
    ...(pod.status?.initContainerStatuses ? { initContainerStatuses: pod.status.initContainerStatuses } : {}),
    agentLog: agentLog === undefined ? { available: false } : { available: true, text: agentLog },
  };
  if (withCourier) {
    const courier = await d.client.readLog(d.namespace, name, "courier");
    obs.courierLog = courier === undefined ? { available: false } : { available: true, text: courier };
  }
  return obs;
}
