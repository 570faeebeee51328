import type { V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Agent } from "../core/types.js";
import type { Change } from "./cache.js";
import { type AgentChangeKeys, keysForAgentChanges, keysForJobChanges } from "./change-keys.js";

const agent = (name: string, station: string | undefined, phase?: string, jobName?: string): Agent =>
  ({
    metadata: { name },
    spec: station === undefined ? {} : { stationRef: station },
    ...(phase || jobName ? { status: { ...(phase ? { phase } : {}), ...(jobName ? { jobName } : {}) } } : {}),
  }) as Agent;
const upsert = (a: Agent): Change<Agent> => ({ type: "upsert", name: a.metadata.name ?? "", object: a });
const del = (a: Agent): Change<Agent> => ({ type: "delete", name: a.metadata.name ?? "", object: a });

describe("keysForAgentChanges", () => {
  it.each<[string, Change<Agent>[], AgentChangeKeys]>([
    ["no changes", [], { reconcile: [], forgetJobs: [], freedStations: [] }],
    [
      "a new Pending Agent is reconciled; it frees nothing",
      [upsert(agent("a", "s"))],
      { reconcile: ["a"], forgetJobs: [], freedStations: [] },
    ],
    [
      "a Running Agent is reconciled; its Job stays",
      [upsert(agent("a", "s", "Running", "agent-job-a"))],
      { reconcile: ["a"], forgetJobs: [], freedStations: [] },
    ],
    [
      "a finished Agent is reconciled (pruning), its Job forgotten, its Station freed",
      [upsert(agent("a", "s", "Succeeded", "job-of-a"))],
      { reconcile: ["a"], forgetJobs: ["job-of-a"], freedStations: ["s"] },
    ],
    [
      "a finished Agent without status.jobName forgets the Job named after it",
      [upsert(agent("a", "s", "Failed"))],
      { reconcile: ["a"], forgetJobs: ["agent-job-a"], freedStations: ["s"] },
    ],
    [
      "a deleted Agent is not reconciled but frees its Station, whatever its phase",
      [del(agent("a", "s", "Running"))],
      { reconcile: [], forgetJobs: ["agent-job-a"], freedStations: ["s"] },
    ],
    [
      "many finished Agents of one Station free it once",
      [upsert(agent("a", "s", "Failed")), upsert(agent("b", "s", "Succeeded")), del(agent("c", "t"))],
      {
        reconcile: ["a", "b"],
        forgetJobs: ["agent-job-a", "agent-job-b", "agent-job-c"],
        freedStations: ["s", "t"],
      },
    ],
    [
      "an Agent without a stationRef frees no Station",
      [upsert(agent("a", undefined, "Failed"))],
      { reconcile: ["a"], forgetJobs: ["agent-job-a"], freedStations: [] },
    ],
  ])("%s", (_name, changes, want) => {
    expect(keysForAgentChanges(changes)).toEqual(want);
  });
});

describe("keysForJobChanges", () => {
  const job = (owners: NonNullable<V1Job["metadata"]>["ownerReferences"]): Change<V1Job> => ({
    type: "upsert",
    name: "j",
    object: { metadata: { name: "j", ownerReferences: owners } },
  });
  const ref = (kind: string, name: string, controller?: boolean) => ({
    apiVersion: "v1",
    kind,
    name,
    uid: `uid-${name}`,
    ...(controller === undefined ? {} : { controller }),
  });

  it.each<[string, Change<V1Job>[], string[]]>([
    ["the controlling Agent", [job([ref("Agent", "a", true)])], ["a"]],
    ["an Agent that does not control the Job is ignored", [job([ref("Agent", "a", false)])], []],
    ["a controller of another kind is ignored", [job([ref("CronJob", "c", true)])], []],
    ["no owners", [job(undefined)], []],
    ["the controlling Agent among other owners", [job([ref("Agent", "x"), ref("Agent", "a", true)])], ["a"]],
  ])("%s", (_name, changes, want) => {
    expect(keysForJobChanges(changes)).toEqual(want);
  });
});
