/**
 * What the controller keeps in memory of each object it caches: only the fields the reconcile
 * reads, in the manner of controller-runtime's cache transforms (docs/decisions.md D-52). Every object passes
 * through these before it enters the cache, from a LIST page or a watch event alike.
 *
 * - Everywhere: `metadata.managedFields` and `metadata.annotations` go (the controller reads
 *   neither; managedFields alone is half of a Job and of an Agent, and kubectl's
 *   last-applied-configuration annotation repeats a whole object).
 * - Agents: `status.output` goes (docs/decisions.md D-52; up to MAX_OUTPUT_BYTES each, and nothing the controller
 *   decides reads it back: a terminal Agent is a no-op and a terminal patch computes the output
 *   afresh). An Agent that has finished, carries no finalizer and is not being deleted is
 *   history: the reconcile only counts it (pruning, concurrency) and a terminal Agent is never
 *   patched again, so it keeps its identity, `spec.stationRef` and the phase and times, and what
 *   the provider limits learn from (`spec.model`, `status.usage`, `status.providerRetries`).
 * - Jobs: the identity, the controlling owner reference, the model-gateway annotation (whether the
 *   run is priced from the gateway's meter) and `status` (conditions, counters, completionTime):
 *   what gather.ts reads. The pod template and the rest of the spec go.
 * - Stations and AgentDefinitions are kept whole apart from the metadata above: the Job builder
 *   reads their specs.
 */
import type { V1Job, V1JobCondition, V1ObjectMeta } from "@kubernetes/client-node";
import { ANNOTATION_MODEL_GATEWAY } from "../core/run-job/layout.js";
import { isSettled } from "../core/state-machine/reconcile.js";
import type { Agent, AgentDefinition, ObjectMeta, Station } from "../core/types.js";

/** The metadata the controller reads: identity, version, generation, times, finalizers. */
function slimMeta<M extends ObjectMeta | V1ObjectMeta>(m: M): M {
  const out = {} as M;
  if (m.name !== undefined) out.name = m.name;
  if (m.namespace !== undefined) out.namespace = m.namespace;
  if (m.uid !== undefined) out.uid = m.uid;
  if (m.resourceVersion !== undefined) out.resourceVersion = m.resourceVersion;
  if (m.generation !== undefined) out.generation = m.generation;
  if (m.creationTimestamp !== undefined) out.creationTimestamp = m.creationTimestamp;
  if (m.deletionTimestamp !== undefined) out.deletionTimestamp = m.deletionTimestamp;
  if (m.finalizers?.length) out.finalizers = m.finalizers;
  return out;
}

export function cachedAgent(agent: Agent): Agent {
  const metadata = slimMeta(agent.metadata ?? {});
  // Settled (state-machine.ts): only history pruning and concurrency counting read it again.
  if (isSettled(agent)) {
    const s = agent.status ?? {};
    return {
      apiVersion: agent.apiVersion,
      kind: agent.kind,
      metadata,
      spec: {
        stationRef: agent.spec?.stationRef,
        ...(agent.spec?.model ? { model: agent.spec.model } : {}),
      },
      status: {
        phase: s.phase,
        ...(s.startedAt !== undefined ? { startedAt: s.startedAt } : {}),
        ...(s.completedAt !== undefined ? { completedAt: s.completedAt } : {}),
        ...(s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
        ...(s.jobName !== undefined ? { jobName: s.jobName } : {}),
        // What the provider limits learn from a finished run (provider-limits.ts), a few numbers.
        ...(s.usage !== undefined ? { usage: s.usage } : {}),
        ...(s.providerRetries !== undefined ? { providerRetries: s.providerRetries } : {}),
      },
    } as Agent;
  }
  const out: Agent = { ...agent, metadata };
  if (agent.status?.output !== undefined) {
    const { output: _dropped, ...status } = agent.status;
    out.status = status;
  }
  return out;
}

export function cachedJob(job: V1Job): V1Job {
  const m = job.metadata ?? {};
  const owner = m.ownerReferences?.find((r) => r.controller);
  const s = job.status ?? {};
  const status: NonNullable<V1Job["status"]> = {};
  if (s.conditions) {
    status.conditions = s.conditions.map((c) => {
      const out: V1JobCondition = { type: c.type, status: c.status };
      if (c.reason !== undefined) out.reason = c.reason;
      if (c.message !== undefined) out.message = c.message;
      if (c.lastTransitionTime !== undefined) out.lastTransitionTime = c.lastTransitionTime;
      return out;
    });
  }
  if (s.active !== undefined) status.active = s.active;
  if (s.ready !== undefined) status.ready = s.ready;
  if (s.succeeded !== undefined) status.succeeded = s.succeeded;
  if (s.failed !== undefined) status.failed = s.failed;
  if (s.completionTime !== undefined) status.completionTime = s.completionTime;
  const gateway = m.annotations?.[ANNOTATION_MODEL_GATEWAY];
  return {
    metadata: {
      ...slimMeta(m),
      ...(gateway !== undefined ? { annotations: { [ANNOTATION_MODEL_GATEWAY]: gateway } } : {}),
      ...(owner
        ? {
            ownerReferences: [
              {
                apiVersion: owner.apiVersion,
                kind: owner.kind,
                name: owner.name,
                uid: owner.uid,
                controller: true,
              },
            ],
          }
        : {}),
    },
    status,
  };
}

export function cachedStation(station: Station): Station {
  return { ...station, metadata: slimMeta(station.metadata ?? {}) };
}

export function cachedDefinition(definition: AgentDefinition): AgentDefinition {
  return { ...definition, metadata: slimMeta(definition.metadata ?? {}) };
}
