/**
 * What the leader keeps in memory (docs/decisions.md D-52): the cache transforms applied on a real API server,
 * the Jobs of finished runs left out, and status patches written through to the cache (so a run
 * costs exactly one Running and one terminal patch, never a write computed from a stale read).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { JOBS, type Resource } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let client: KubeClient;
let ns: string;
let replica: ControllerReplica;
/** Status patches the controller sent, per Agent, in order: the phase written (or "-"). */
const patches = new Map<string, string[]>();
const logs: string[] = [];

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  // Count the controller's status writes (it shares this client).
  const patchStatus = client.patchStatus.bind(client);
  client.patchStatus = (r: Resource, n: string, name: string, rv: string, status, written) => {
    patches.set(name, [...(patches.get(name) ?? []), String(status.phase ?? "-")]);
    return patchStatus(r, n, name, rv, status, written);
  };
  ns = await createTestNamespace("ctrl-cache");
  await createDefinition(client, ns, "def");
  await createStation(client, ns, "st", "def", {
    successfulRunsHistoryLimit: 10,
    annotations: podScriptAnnotations({ exitCode: 0, runTime: "6s", logs: { agent: "cached run" } }),
  });
  // The production Lease timings: a loaded machine must not hand leadership over mid-test.
  replica = await startReplica(
    client,
    ns,
    "cache-a",
    { log: (m) => logs.push(m) },
    { leaseTickMs: 5000, leaseDurationMs: 15_000 },
  );
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("the leader's cache", () => {
  it("holds a Running run's Job without its pod template, and forgets it once the run finished", async () => {
    await createAgent(client, ns, "c-1", "st");
    await waitForPhase(client, ns, "c-1", ["Running"]);
    // Read the leader's controller afresh each time: a lost Lease on a loaded machine builds a new one.
    const c = () => replica.controller;
    const job = await eventually("the Job in the cache", async () => c()?.jobs.cache.get(jobNameFor("c-1")));
    expect(job.spec).toBeUndefined();
    expect(job.metadata).not.toHaveProperty("managedFields");
    expect(job.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: "Agent", name: "c-1", controller: true }),
    ]);
    const running = c()?.agents.cache.get("c-1");
    expect(running?.metadata).not.toHaveProperty("managedFields");
    expect(running?.spec.parameters).toEqual({ topic: "tests" });

    const done = await waitForPhase(client, ns, "c-1", ["Succeeded", "Failed"]);
    expect(done.status?.output).toContain("cached run");
    await eventually(
      "the finished run in the cache",
      async () => c()?.agents.cache.get("c-1")?.status?.phase === "Succeeded",
    );
    expect(c()?.jobs.cache.get(jobNameFor("c-1"))).toBeUndefined();
    // History: identity, station and times only; no output, no conditions, no parameters.
    expect(c()?.agents.cache.get("c-1")).toEqual({
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: expect.objectContaining({ name: "c-1" }),
      spec: { stationRef: "st" },
      status: expect.objectContaining({ phase: "Succeeded", exitCode: 0 }),
    });
    expect(c()?.agents.cache.get("c-1")?.status).not.toHaveProperty("conditions");

    // The poll re-lists the Jobs: the finished run's Job, still on the server, stays out.
    await c()?.pollOnce();
    expect(await client.get(JOBS, ns, jobNameFor("c-1"))).toBeDefined();
    expect(c()?.jobs.cache.get(jobNameFor("c-1"))).toBeUndefined();
  });

  it("a run costs one Running and one terminal status patch, and no write conflicts", async () => {
    const names = Array.from({ length: 8 }, (_, i) => `w-${i}`);
    await Promise.all(names.map((n) => createAgent(client, ns, n, "st")));
    for (const n of names) await waitForPhase(client, ns, n, ["Succeeded", "Failed"]);
    await replica.controller?.whenIdle();
    for (const n of names) expect(patches.get(n), n).toEqual(["Running", "Succeeded"]);
    expect(logs.filter((l) => l.includes("conflict"))).toEqual([]);
  });
});
