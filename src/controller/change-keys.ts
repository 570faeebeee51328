/**
 * What a batch of cache changes means for the work queue, decided without touching the queue:
 * which Agents to reconcile, which Jobs the cache may forget, which Stations freed a slot (their
 * waiting Agents may start now). Pure, so the mapping from a change to its keys is tested on its
 * own (change-keys.test.ts) and the controller only carries it out.
 */
import type { V1Job } from "@kubernetes/client-node";
import { jobNameFor } from "../core/run-job/names.js";
import type { Agent } from "../core/types.js";
import type { Change } from "./cache.js";

export interface AgentChangeKeys {
  /** Agents to reconcile: every one that was created or changed. */
  reconcile: string[];
  /** Jobs nothing reads again: those of finished or deleted Agents. */
  forgetJobs: string[];
  /** Stations whose waiting Agents to reconcile: a run there ended or vanished. Once each. */
  freedStations: string[];
}

const finished = (agent: Agent) => {
  const phase = agent.status?.phase;
  return phase === "Succeeded" || phase === "Failed";
};

export function keysForAgentChanges(changes: readonly Change<Agent>[]): AgentChangeKeys {
  const reconcile: string[] = [];
  const forgetJobs: string[] = [];
  const freed = new Set<string>();
  for (const ch of changes) {
    if (ch.type === "upsert") reconcile.push(ch.name);
    const gone = ch.type === "delete" || finished(ch.object);
    if (!gone) continue;
    forgetJobs.push(ch.object.status?.jobName || jobNameFor(ch.name));
    const station = ch.object.spec?.stationRef;
    // Once per Station and batch: a LIST can report thousands of finished Agents of one Station.
    if (station) freed.add(station);
  }
  return { reconcile, forgetJobs, freedStations: [...freed] };
}

/** The Agent that controls a Job (its controlling owner reference of kind Agent), if any. */
export function controllingAgent(job: V1Job): { name: string; uid: string | undefined } | undefined {
  const owner = job.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Agent");
  return owner ? { name: owner.name, uid: owner.uid } : undefined;
}

/** Agents to reconcile for a batch of Job changes: each changed Job's controlling Agent. */
export function keysForJobChanges(changes: readonly Change<V1Job>[]): string[] {
  const out: string[] = [];
  for (const ch of changes) {
    const owner = controllingAgent(ch.object);
    if (owner) out.push(owner.name);
  }
  return out;
}
