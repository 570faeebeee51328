import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENTS, JOBS, PODS } from "../../../src/kube/resources.js";
import { createTestNamespace, kubeConfig, podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  getAgent,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let client: KubeClient;
let ns: string;
let replica: ControllerReplica;

beforeAll(async () => {
  client = await clientFor(kubeConfig());
  ns = await createTestNamespace("ctrl-life");
  await createDefinition(client, ns, "def");
  replica = await startReplica(client, ns, "replica-a");
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

describe("controller lifecycle on a real API server", () => {
  it("Pending → Running → Succeeded with the pod's output and exitCode 0", async () => {
    await createStation(client, ns, "ok", "def", {
      annotations: podScriptAnnotations({
        exitCode: 0,
        runTime: "2s",
        logs: { agent: "hello from the run\nsecond line" },
      }),
    });
    await createAgent(client, ns, "ok-1", "ok");
    const running = await waitForPhase(client, ns, "ok-1", ["Running", "Succeeded"]);
    expect(running.status?.jobName).toBe(jobNameFor("ok-1"));
    const done = await waitForPhase(client, ns, "ok-1", ["Succeeded", "Failed"]);
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
    expect(done.status?.output).toContain("hello from the run\nsecond line");
    expect(done.status?.startedAt).toBeTruthy();
    expect(done.status?.completedAt).toBeTruthy();
    const job = await client.get<V1Job>(JOBS, ns, jobNameFor("ok-1"));
    expect(job?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "Agent",
      name: "ok-1",
      controller: true,
    });
  });

  it("Failed with the pod's non-zero exit code", async () => {
    await createStation(client, ns, "bad", "def", {
      annotations: podScriptAnnotations({ exitCode: 3, logs: { agent: "boom" } }),
    });
    await createAgent(client, ns, "bad-1", "bad");
    const done = await waitForPhase(client, ns, "bad-1", ["Succeeded", "Failed"]);
    expect(done.status).toMatchObject({ phase: "Failed", exitCode: 3 });
    expect(done.status?.failureReason).toBeTruthy();
    expect(done.status?.output).toContain("boom");
  });

  it("a missing Station fails the Agent with the exact reason", async () => {
    await createAgent(client, ns, "lost-1", "no-such-station");
    const done = await waitForPhase(client, ns, "lost-1", ["Failed"]);
    expect(done.status).toMatchObject({
      phase: "Failed",
      exitCode: 1,
      failureReason: "Station no-such-station not found",
    });
  });

  it("a pod deleted before read-back gives the output-unavailable reason", async () => {
    await createStation(client, ns, "slow", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "4s", logs: { agent: "never read" } }),
    });
    await createAgent(client, ns, "gc-1", "slow");
    await waitForPhase(client, ns, "gc-1", ["Running"]);
    // Take the controller away so it cannot read back before the pod is gone.
    await replica.stop({ releaseLease: true });
    const jobName = jobNameFor("gc-1");
    await eventually("the Job to finish", async () => {
      const job = await client.get<V1Job>(JOBS, ns, jobName);
      return (job?.status?.succeeded ?? 0) > 0;
    });
    const pods = await client.list<V1Pod>(PODS, ns, { labelSelector: `job-name=${jobName}` });
    for (const p of pods.items) await client.delete(PODS, ns, p.metadata?.name ?? "");
    await eventually("the pod to be gone", async () => {
      const left = await client.list<V1Pod>(PODS, ns, { labelSelector: `job-name=${jobName}` });
      return left.items.length === 0;
    });
    replica = await startReplica(client, ns, "replica-a");
    const done = await waitForPhase(client, ns, "gc-1", ["Succeeded", "Failed"]);
    expect(done.status?.failureReason).toBe("run output unavailable: pod garbage-collected");
    expect(done.status?.output ?? "").toBe("");
  });

  it("pruning keeps exactly the history limits", async () => {
    await createStation(client, ns, "prune", "def", {
      successfulRunsHistoryLimit: 2,
      failedRunsHistoryLimit: 1,
      annotations: podScriptAnnotations({ exitCode: 0 }),
    });
    for (let i = 1; i <= 4; i++) {
      await createAgent(client, ns, `p-${i}`, "prune");
      await eventually(`p-${i} terminal or pruned`, async () => {
        const a = await getAgent(client, ns, `p-${i}`);
        return !a || a.status?.phase === "Succeeded";
      });
    }
    const left = await eventually("pruning to 2 Succeeded Agents", async () => {
      const all = await client.list<Agent>(AGENTS, ns);
      const mine = all.items.filter((a) => a.spec.stationRef === "prune");
      return mine.length === 2 ? mine : undefined;
    });
    // The newest two are kept.
    expect(left.map((a) => a.metadata.name).sort()).toEqual(["p-3", "p-4"]);
  });

  it("Replace preempts the oldest Running run", async () => {
    await createStation(client, ns, "replace", "def", {
      maxConcurrentRuns: 1,
      concurrencyPolicy: "Replace",
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "60s" }),
    });
    await createAgent(client, ns, "r-1", "replace");
    await waitForPhase(client, ns, "r-1", ["Running"]);
    await createAgent(client, ns, "r-2", "replace");
    await eventually("r-1 to be deleted", async () => (await getAgent(client, ns, "r-1")) === undefined);
    const r2 = await waitForPhase(client, ns, "r-2", ["Running"]);
    expect(r2.status?.jobName).toBe(jobNameFor("r-2"));
  });

  it("a stale status write is rejected with 409 and recomputed, not forced", async () => {
    await createStation(client, ns, "stale", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "3s", logs: { agent: "fresh" } }),
    });
    await createAgent(client, ns, "s-1", "stale");
    const running = await waitForPhase(client, ns, "s-1", ["Running"]);
    const staleRv = running.metadata.resourceVersion ?? "";
    // Someone else writes: our read is now stale.
    await client.jsonPatch(AGENTS, ns, "s-1", [
      { op: "add", path: "/metadata/labels", value: { touched: "yes" } },
    ]);
    const outcome = await client.patchStatus(AGENTS, ns, "s-1", staleRv, {
      phase: "Failed",
      failureReason: "stale",
    });
    expect(outcome).toBe("conflict");
    const after = await getAgent(client, ns, "s-1");
    expect(after?.status?.failureReason).not.toBe("stale");
    // The controller's own writes recompute from fresh state and still finish the run.
    const done = await waitForPhase(client, ns, "s-1", ["Succeeded", "Failed"]);
    expect(done.status).toMatchObject({ phase: "Succeeded", exitCode: 0 });
    expect(done.status?.output).toContain("fresh");
  });
});
