/**
 * Builds the reconcile core's input for one Agent from the shared cache, reading the API server
 * only for what the cache cannot answer safely:
 * - a Station or AgentDefinition missing from the cache is confirmed with a GET before the core
 *   may fail the Agent for it (the Agent and Station watches are separate streams, so a freshly
 *   created Station can lag behind the Agent that names it);
 * - a Job missing from the cache is confirmed with a GET (a 404 there means garbage-collected);
 * - the pod and its logs are read only once the Job has finished (one LIST by job-name, one
 *   streamed read of each container's whole log through the meter, at most LOG_READ_CONCURRENCY
 *   at once; a read that fails is retried, never taken for a GC'd pod).
 */

import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import type {
  BatchMemory,
  ControllerSettings,
  JobCreateFailure,
  JobObservation,
  LogRead,
  PodObservation,
  ReconcileInput,
} from "../core/input.js";
import type { PriceTable } from "../core/pricing/prices.js";
import type { ProviderInput } from "../core/provider-limits/admission.js";
import { LogMeter, type LogMeterPlan } from "../core/readback/log-meter.js";
import { initFailedBeforeAgent, jobState } from "../core/readback/readback.js";
import { isGatewayVendor } from "../core/run-job/gateway-credential.js";
import { ANNOTATION_MODEL_GATEWAY } from "../core/run-job/layout.js";
import { jobNameFor, jobPodSelector } from "../core/run-job/names.js";
import {
  DEFAULT_STUCK_POD_SECONDS,
  mayBeStuck,
  type RunningPodObservation,
} from "../core/run-job/stuck-pod.js";
import { context } from "../core/state-machine/context.js";
import { readBackPlans } from "../core/state-machine/running-job.js";
import type { Agent, AgentDefinition, Station } from "../core/types.js";
import type { KubeClient } from "../kube/client.js";
import { KubeApiError } from "../kube/errors.js";
import { AGENT_DEFINITIONS, JOBS, PODS, STATIONS } from "../kube/resources.js";
import { type GatewayRecords, readGatewayRecords } from "./metered-usage.js";
import type { Semaphore } from "./semaphore.js";

export interface CacheView {
  agent(name: string): Agent | undefined;
  station(name: string): Station | undefined;
  definition(name: string): AgentDefinition | undefined;
  job(name: string): V1Job | undefined;
  stationAgents(station: string): Agent[];
}

export interface GatherDeps {
  cache: CacheView;
  client: Pick<KubeClient, "get" | "list" | "streamLog">;
  namespace: string;
  settings: ControllerSettings;
  pendingCreations: (station: string) => string[];
  batch: (uid: string) => BatchMemory;
  /** The Agent's last failed Job creation, if the latest attempt failed. */
  jobCreateFailure?: (uid: string) => JobCreateFailure | undefined;
  /** What the controller knows of a Pending Agent's provider endpoint, when a limit may hold it. */
  provider?: (
    agent: Agent,
    station: Station | undefined,
    definition: AgentDefinition | undefined,
  ) => ProviderInput | undefined;
  /** The installation's price overrides as last read (src/controller/price-overrides.ts). */
  prices?: () => PriceTable;
  now: () => number;
  /** Bounds the concurrent pod log reads (LOG_READ_CONCURRENCY); unbounded without it. */
  logReads?: Semaphore;
}

/**
 * How long after the Job finished a log read failing with 5xx, throttling or a timeout is
 * retried (by failing the reconcile) before the run is recorded with the read error. The Job
 * keeps its pod for an hour (ttlSecondsAfterFinished), so this stays well inside it.
 */
export const LOG_READ_RETRY_MS = 10 * 60_000;
/** How much of a log the meter reads before the read yields to the event loop, characters. */
export const METER_SLICE_CHARS = 16 * 1024;

export function toJobObservation(job: V1Job | undefined): JobObservation {
  if (!job) return { found: false };
  const owner = job.metadata?.ownerReferences?.find((r) => r.controller);
  const annotated = job.metadata?.annotations?.[ANNOTATION_MODEL_GATEWAY];
  const gatewayVendor = isGatewayVendor(annotated) ? annotated : undefined;
  return {
    found: true,
    ...(owner?.uid ? { ownerUid: owner.uid } : {}),
    ...(gatewayVendor !== undefined ? { gatewayVendor } : {}),
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
    ...withJobCreateFailure(d.jobCreateFailure?.(agent.metadata.uid ?? "")),
    ...withProvider(d.provider?.(agent, station, definition)),
    settings: d.settings,
    ...(d.prices !== undefined ? { prices: d.prices() } : {}),
    now: d.now(),
  };

  if (needsJob(agent)) {
    const jobName = agent.status?.jobName || jobNameFor(agent.metadata.name ?? "");
    const job = d.cache.job(jobName) ?? (await d.client.get<V1Job>(JOBS, ns, jobName));
    input.job = toJobObservation(job);
    const state = jobState(input.job).state;
    if (state === "succeeded" || state === "failed") {
      const retryUntil = (jobFinishedAt(job) ?? input.now) + LOG_READ_RETRY_MS;
      input.pod = await readPod(
        d,
        jobName,
        !!definition?.spec.delivery?.pullRequest,
        input.now < retryUntil,
        readBackPlans(context(input)),
      );
      Object.assign(input, await gatewayRecordsOf(d, agent, input.job, jobFinishedAt(job), input.now));
    } else if (state === "gone" && d.settings.gateway) {
      Object.assign(input, await gatewayRecordsOf(d, agent, input.job, undefined, input.now));
    } else if (state === "running") {
      const startedAt = agent.status?.startedAt ? Date.parse(agent.status.startedAt) : undefined;
      const stuckSeconds = d.settings.stuckPodSeconds ?? DEFAULT_STUCK_POD_SECONDS;
      if (mayBeStuck(startedAt, job?.status?.ready, input.now, stuckSeconds)) {
        input.runningPod = await readRunningPod(d, jobName);
      }
    }
  }
  return input;
}

/**
 * A finished gateway run's records (src/controller/metered-usage.ts): its metered calls for a Job
 * the Job builder annotated, and for a Job that is gone when the gateway is on (its records say
 * whether the run was metered); its egress refusals for every run while the gateway is on.
 */
async function gatewayRecordsOf(
  d: GatherDeps,
  agent: Agent,
  job: JobObservation,
  finishedAt: number | undefined,
  now: number,
): Promise<GatewayRecords> {
  const jobVendor = job.found ? job.gatewayVendor : undefined;
  if (jobVendor === undefined && !d.settings.gateway) return {};
  const read = job.found
    ? jobVendor !== undefined
      ? { vendor: jobVendor }
      : { metered: false as const }
    : undefined;
  return readGatewayRecords(d.client, d.namespace, agent.metadata.uid ?? "", read, finishedAt, now);
}

const withJobCreateFailure = (f: JobCreateFailure | undefined) => (f ? { jobCreateFailure: { ...f } } : {});
const withProvider = (p: ProviderInput | undefined) => (p ? { provider: p } : {});

/** When the Job's outcome was decided: completionTime, else the terminal condition's transition. */
export function jobFinishedAt(job: V1Job | undefined): number | undefined {
  if (job?.status?.completionTime) return new Date(job.status.completionTime).getTime();
  const done = (job?.status?.conditions ?? []).find(
    (c) =>
      c.status === "True" && ["Complete", "Failed", "FailureTarget", "SuccessCriteriaMet"].includes(c.type),
  );
  const t = done?.lastTransitionTime ? new Date(done.lastTransitionTime).getTime() : Number.NaN;
  return Number.isNaN(t) ? undefined : t;
}

/** The oldest pod of a running Job, statuses only (docs/decisions.md D-22); undefined when there is none yet. */
async function readRunningPod(d: GatherDeps, jobName: string): Promise<RunningPodObservation | undefined> {
  const pods = (await d.client.list<V1Pod>(PODS, d.namespace, { labelSelector: jobPodSelector(jobName) }))
    .items;
  pods.sort((a, b) =>
    String(a.metadata?.creationTimestamp ?? "").localeCompare(String(b.metadata?.creationTimestamp ?? "")),
  );
  const pod = pods[0];
  const created = pod?.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : NaN;
  if (!pod || Number.isNaN(created)) return undefined;
  return {
    createdAt: created,
    ...(pod.status?.initContainerStatuses ? { initContainerStatuses: pod.status.initContainerStatuses } : {}),
    ...(pod.status?.containerStatuses ? { containerStatuses: pod.status.containerStatuses } : {}),
  };
}

async function readPod(
  d: GatherDeps,
  jobName: string,
  withCourier: boolean,
  retryReadErrors: boolean,
  plans: { agent: LogMeterPlan; other: LogMeterPlan },
): Promise<PodObservation> {
  // A failed LIST says nothing about the pod: it throws, and the reconcile is retried, rather than
  // reading as "pod garbage-collected" and ending the run without its output.
  const pods = (await d.client.list<V1Pod>(PODS, d.namespace, { labelSelector: jobPodSelector(jobName) }))
    .items;
  // Oldest first, so "the first pod" is stable across reads.
  pods.sort((a, b) =>
    String(a.metadata?.creationTimestamp ?? "").localeCompare(String(b.metadata?.creationTimestamp ?? "")),
  );
  const pod = pods[0];
  const name = pod?.metadata?.name;
  if (!pod || !name) return { found: false };
  const read = (container: string) =>
    readContainerLog(d, name, container, retryReadErrors, container === "agent" ? plans.agent : plans.other);
  const containerStatuses = pod.status?.containerStatuses;
  const initContainerStatuses = pod.status?.initContainerStatuses;
  // docs/decisions.md D-23: an agent that never ran has no log; what there is to show is the init's.
  const initOnly = initFailedBeforeAgent(containerStatuses, initContainerStatuses);
  const obs: PodObservation = {
    found: true,
    ...(containerStatuses ? { containerStatuses } : {}),
    ...(initContainerStatuses ? { initContainerStatuses } : {}),
    agentLog: initOnly ? { available: false } : await read("agent"),
    ...(initOnly ? { initLog: await read("init") } : {}),
  };
  if (withCourier) obs.courierLog = await read("courier");
  return obs;
}

/**
 * One container's whole log, streamed once through the meter (src/core/readback/log-meter.ts): what is kept
 * is the log's tail for the output and the facts of all of it, in fixed memory. A read that fails
 * (5xx, timeout, throttling) throws while `retry` holds, so the reconcile is retried; afterwards
 * the run is recorded with the error rather than as a garbage-collected pod.
 */
async function readContainerLog(
  d: GatherDeps,
  pod: string,
  container: string,
  retry: boolean,
  plan: LogMeterPlan,
): Promise<LogRead> {
  const stream = async (): Promise<LogRead> => {
    const meter = new LogMeter(plan);
    const found = await d.client.streamLog(d.namespace, pod, container, async (chunk) => {
      // In slices, yielding between them: however large the chunks, no slice holds the event loop
      // (Lease renewal, /healthz, the webhook, the prompt API) for long.
      for (let at = 0; at < chunk.length; at += METER_SLICE_CHARS) {
        meter.feed(
          at === 0 && chunk.length <= METER_SLICE_CHARS ? chunk : chunk.slice(at, at + METER_SLICE_CHARS),
        );
        await yieldToLoop();
      }
    });
    if (!found) return { available: false };
    const m = meter.end();
    return {
      available: true,
      text: m.text,
      ...(m.droppedBytes > 0 ? { droppedBytes: m.droppedBytes } : {}),
      facts: m.facts,
    };
  };
  try {
    return await (d.logReads ? d.logReads.run(stream) : stream());
  } catch (err) {
    if (retry) throw err;
    const error = err instanceof KubeApiError ? `${err.status} ${err.detail}`.trim() : String(err);
    return { available: false, error };
  }
}
