/** Two in-process replicas contend for the Lease: one reconciles, and a crash hands over. */
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { JOBS, LEASES } from "../../../src/kube/resources.js";
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
const replicas: ControllerReplica[] = [];

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-leader");
  await createDefinition(client, ns, "def");
  await createStation(client, ns, "st", "def", {
    maxConcurrentRuns: 20,
    // Keep every finished run (and its Job) so the Jobs can be counted per Agent.
    successfulRunsHistoryLimit: 20,
    annotations: podScriptAnnotations({ exitCode: 0, runTime: "3s" }),
  });
});

afterAll(async () => {
  for (const r of replicas) await r.stop({ releaseLease: false });
  await client?.close();
});

describe("leader election between two replicas", () => {
  it("exactly one replica reconciles; stopping it hands over with no Agent ever getting two Jobs", async () => {
    const leaseDurationMs = 3000;
    const a = await startReplica(client, ns, "replica-a", {}, { leaseDurationMs, leaseTickMs: 500 });
    const b = await startReplica(client, ns, "replica-b", {}, { leaseDurationMs, leaseTickMs: 500 });
    replicas.push(a, b);
    const leader = await eventually("a leader", async () => (a.isLeader ? a : b.isLeader ? b : undefined));
    const standby = leader === a ? b : a;
    const first = ["e-1", "e-2", "e-3", "e-4"];
    for (const n of first) await createAgent(client, ns, n, "st");
    for (const n of first) await waitForPhase(client, ns, n, ["Running", "Succeeded"]);
    // Over many ticks, never both.
    for (let i = 0; i < 10; i++) {
      expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(standby.controller).toBeUndefined();
    expect(
      (await standby.metrics.registry.getSingleMetricAsString("controller_resyncs_total")).trim(),
    ).toMatch(/ 0$/);

    const lease = await client.get<{ spec: { holderIdentity: string } }>(LEASES, ns, "agent-controller");
    expect(lease?.spec.holderIdentity).toBe(leader.elector === a.elector ? "replica-a" : "replica-b");

    // Crash-like stop: the Lease is not released, so the standby must wait out the lease.
    const stoppedAt = Date.now();
    await leader.stop({ releaseLease: false });
    const second = ["e-5", "e-6", "e-7"];
    for (const n of second) await createAgent(client, ns, n, "st");
    await eventually("the standby to take over", async () => standby.isLeader);
    const handoverMs = Date.now() - stoppedAt;
    console.log(`leader handover took ${handoverMs} ms (lease duration ${leaseDurationMs} ms)`);
    for (const n of [...first, ...second]) {
      const done = await waitForPhase(client, ns, n, ["Succeeded", "Failed"]);
      expect(done.status?.phase, n).toBe("Succeeded");
    }
    const jobs = await client.list<V1Job>(JOBS, ns);
    const owners = jobs.items.map((j) => j.metadata?.ownerReferences?.[0]?.uid);
    expect(owners).toHaveLength(first.length + second.length);
    expect(new Set(owners).size).toBe(owners.length);
    const lease2 = await client.get<{ spec: { holderIdentity: string; leaseTransitions: number } }>(
      LEASES,
      ns,
      "agent-controller",
    );
    expect(lease2?.spec.holderIdentity).toBe(standby === a ? "replica-a" : "replica-b");
    expect(lease2?.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
  });
});
