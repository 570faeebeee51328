/**
 * The gateway's ports in a cluster (`GATEWAY_MODE=cluster`, docs/gateway.md#what-is-injected), on
 * one Kubernetes client acting as the gateway's ServiceAccount: the run lookup (get agents), the
 * keys its definition names (get stations, agentdefinitions; agent-secrets mounted), the usage
 * records (create, get, update modelusages), budgets in flight (get stations, list modelusages) and
 * the egress proxy's Warning Events (create events.k8s.io events).
 */

import { LABEL_STATION } from "../core/run-job/layout.js";
import { shortenName } from "../core/run-job/names.js";
import type { Agent, AgentDefinition, ModelUsage, Station } from "../core/types.js";
import type { KubeClient } from "../kube/client.js";
import { apiEventWriter } from "../kube/event-writer.js";
import { AGENT_DEFINITIONS, AGENTS, MODEL_USAGES, STATIONS } from "../kube/resources.js";
import type { JsonLineLogger } from "../log.js";
import { BudgetGate } from "./budget-gate.js";
import { definitionKeySource } from "./definition-keys.js";
import { EgressRefusalReporter } from "./egress-refusals.js";
import type { KeySource } from "./ports.js";
import { ClusterRunLookup } from "./run-lookup.js";
import { RunWarnings } from "./run-warnings.js";
import { ModelUsageStore, type UsageObjects } from "./usage-store.js";

/** At most one "answering from the cache" warning this often, however many requests an outage meets. */
const STALE_WARNING_MS = 10_000;
/** How long a Station read for its budget is reused. */
const STATION_CACHE_MS = 2_000;

export interface ClusterPortsOptions {
  kube: KubeClient;
  namespace: string;
  /** agent-secrets, mounted whole. */
  agentSecretsDir: string;
  /** This gateway pod's name, recorded in its usage records. */
  replica: string;
  logger: JsonLineLogger;
}

export interface ClusterPorts {
  runs: ClusterRunLookup;
  keys: KeySource;
  usage: ModelUsageStore;
  budget: BudgetGate;
  /** Warning Events on Agents (run-warnings.ts): the refusals a run's author must see as they happen. */
  warnings: RunWarnings;
  /** Where the egress proxy's refusals go besides the 403: the usage record and a Warning Event. */
  egressRefusals: EgressRefusalReporter;
  /** Writes what the usage store still holds; the client stays open. */
  close(): Promise<void>;
}

export function modelUsageObjects(kube: KubeClient): UsageObjects {
  return {
    create: async (ns, object) => {
      const { created, object: stored } = await kube.create<ModelUsage>(MODEL_USAGES, ns, object);
      if (!created || !stored) throw Object.assign(new Error("the object exists already"), { status: 409 });
      return stored;
    },
    get: (ns, name) => kube.get<ModelUsage>(MODEL_USAGES, ns, name),
    replace: (ns, object) => kube.replace<ModelUsage>(MODEL_USAGES, ns, object.metadata.name ?? "", object),
  };
}

export function clusterPorts(o: ClusterPortsOptions): ClusterPorts {
  const { kube, logger } = o;
  let warnedAt = Number.NEGATIVE_INFINITY;
  const runs = new ClusterRunLookup({
    namespace: o.namespace,
    getAgent: (ns, name) => kube.get<Agent>(AGENTS, ns, name),
    onStale: (run, err) => {
      if (Date.now() - warnedAt < STALE_WARNING_MS) return;
      warnedAt = Date.now();
      logger.warn("the API server cannot be asked; answering from a recent Agent read", {
        agent: `${run.namespace}/${run.name}`,
        error: (err as Error)?.message ?? String(err),
      });
    },
  });
  const keys = definitionKeySource({
    namespace: o.namespace,
    secretsDir: o.agentSecretsDir,
    stationOf: (run) => runs.stationOf(run),
    getStation: (ns, name) => kube.get<Station>(STATIONS, ns, name),
    getDefinition: (ns, name) => kube.get<AgentDefinition>(AGENT_DEFINITIONS, ns, name),
  });
  const usage = new ModelUsageStore({
    objects: modelUsageObjects(kube),
    replica: o.replica,
    onWriteError: (run, err) =>
      logger.error("usage record not written yet; retrying", {
        agent: `${run.namespace}/${run.name}`,
        error: (err as Error)?.message ?? String(err),
      }),
  });
  // The Station's budget and spend: a stale copy counts more, not less (budget-in-flight.ts), so a
  // few seconds of cache only spare the API server.
  const stations = new Map<string, { at: number; station: Station | undefined }>();
  const budget = new BudgetGate({
    station: async (ns, name) => {
      const hit = stations.get(`${ns}/${name}`);
      if (hit && Date.now() - hit.at < STATION_CACHE_MS) return hit.station;
      const station = await kube.get<Station>(STATIONS, ns, name);
      stations.set(`${ns}/${name}`, { at: Date.now(), station });
      return station;
    },
    records: async (ns, station) =>
      (
        await kube.list<ModelUsage>(MODEL_USAGES, ns, {
          labelSelector: `${LABEL_STATION}=${shortenName(station)}`,
        })
      ).items,
    reserve: (run, vendor, station, usd) => usage.reserve(run, vendor, station, usd),
    release: (run, vendor, usd) => usage.release(run, vendor, usd),
  });
  const events = apiEventWriter(kube);
  const warnings = new RunWarnings({
    createEvent: (event) => events.create(event),
    replica: o.replica,
    onError: (run, err) =>
      logger.error("warning Event not written", {
        agent: `${run.namespace}/${run.name}`,
        error: (err as Error)?.message ?? String(err),
      }),
  });
  const egressRefusals = new EgressRefusalReporter({
    record: (run, refusal) => usage.egressRefused(run, refusal),
    warnings,
    onError: (what, run, err) =>
      logger.error(`egress refusal: ${what} not written`, {
        agent: `${run.namespace}/${run.name}`,
        error: (err as Error)?.message ?? String(err),
      }),
  });
  return { runs, keys, usage, budget, warnings, egressRefusals, close: () => usage.drain() };
}
