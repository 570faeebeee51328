/**
 * Watch recovery after etcd compaction (410 Gone) and an API-server restart mid-run, on a
 * private control plane so neither disturbs other test files.
 */
import { KubeConfig, type V1Job, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENTS, JOBS, PODS } from "../../../src/kube/resources.js";
import {
  type ControlPlane,
  compactEtcd,
  installCrds,
  restartApiServer,
  startControlPlane,
} from "../../harness/cluster.js";
import { podScriptAnnotations } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import { projectCrdFiles } from "../../harness/global-setup.js";
import {
  clientFor,
  createAgent,
  createDefinition,
  createStation,
  startReplica,
  waitForPhase,
} from "./helpers.js";

let plane: ControlPlane;
let client: KubeClient;
const ns = "ctrl-resilience";

beforeAll(async () => {
  plane = await startControlPlane();
  await installCrds(plane.api(), projectCrdFiles());
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfig);
  client = await clientFor(kc);
  await client.request("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
  await createDefinition(client, ns, "def");
});

function kubeConfigOf(p: ControlPlane): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(p.kubeconfig);
  return kc;
}

afterAll(async () => {
  await client?.close();
  await plane?.stop();
});

async function allSucceeded(names: string[], timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (const n of names) {
    const a = await waitForPhase(
      client,
      ns,
      n,
      ["Succeeded", "Failed"],
      Math.max(1_000, deadline - Date.now()),
    );
    expect(a.status?.phase, n).toBe("Succeeded");
  }
}

describe("watch + poll resilience", () => {
  it("a watch forced into 410 by compaction re-lists, recovers and loses no Agent", async () => {
    // History kept, so no finished Agent is pruned while the test still looks for it.
    await createStation(client, ns, "quick", "def", {
      successfulRunsHistoryLimit: 50,
      annotations: podScriptAnnotations({ exitCode: 0 }),
    });
    const logs: string[] = [];
    // Poll effectively off: recovery must come from the watch's own re-list.
    const replica: ControllerReplica = await startReplica(
      client,
      ns,
      "r-410",
      { log: (m) => logs.push(m) },
      { watchTimeoutSeconds: 2, pollIntervalMs: 600_000 },
    );
    try {
      const step = async <T>(what: string, p: Promise<T>) =>
        p.catch(async (e: Error) => {
          const agents = await client.list<Agent>(AGENTS, ns);
          const phases = agents.items.map((a) => `${a.metadata.name}=${a.status?.phase ?? "Pending"}`);
          throw new Error(
            `${what}: ${e.message}\nAgents: ${phases.join(" ")}\nlog:\n${logs.slice(-40).join("\n")}`,
          );
        });
      await step(
        "leadership",
        eventually("leadership", async () => replica.isLeader && replica.controller?.synced, 40_000),
      );
      await createAgent(client, ns, "g-0", "quick");
      await step("g-0", waitForPhase(client, ns, "g-0", ["Succeeded"], 40_000));
      // Move etcd's revision well past the Agent watch's cursor, then compact it away.
      for (let i = 0; i < 5; i++) {
        await client.request("POST", `/api/v1/namespaces/${ns}/configmaps`, {
          body: { metadata: { generateName: "bump-" } },
        });
      }
      await compactEtcd(plane.stateFile);
      await eventually(
        "the Agent watch to hit 410 and re-list",
        async () => logs.some((l) => l.startsWith("agents: watch cursor") && l.includes("(410)")),
        30_000,
      ).catch((e) => {
        throw new Error(`${e.message}; controller log:\n${logs.slice(-30).join("\n")}`);
      });
      const names = ["g-1", "g-2", "g-3", "g-4"];
      for (const n of names) await createAgent(client, ns, n, "quick");
      await step(
        "g-1..g-4",
        (async () => {
          for (const n of ["g-0", ...names]) await waitForPhase(client, ns, n, ["Succeeded"], 40_000);
        })(),
      );
      const metrics = await replica.metrics.registry.getSingleMetricAsString(
        "controller_watch_reconnects_total",
      );
      expect(Number(metrics.trim().split(" ").pop())).toBeGreaterThan(0);
    } finally {
      await Promise.race([
        replica.stop(),
        new Promise((_, reject) =>
          setTimeout(
            () => reject(new Error(`replica.stop() hung; log:\n${logs.slice(-40).join("\n")}`)),
            20_000,
          ),
        ),
      ]);
    }
  });

  it("the API server restarted mid-run: every Agent still finishes", async () => {
    await createStation(client, ns, "slow", "def", {
      successfulRunsHistoryLimit: 50,
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "6s", logs: { agent: "survived" } }),
    });
    const logs: string[] = [];
    const replica = await startReplica(client, ns, "r-restart", { log: (m) => logs.push(m) });
    const explain = async (e: Error): Promise<never> => {
      const agents = await client.list<Agent>(AGENTS, ns).catch(() => ({ items: [] as Agent[] }));
      const phases = agents.items.map((a) => `${a.metadata.name}=${a.status?.phase ?? "Pending"}`);
      // What the world says about the runs that did not finish: the Job's and its pod's view.
      const stuck: string[] = [];
      for (const a of agents.items.filter((x) => x.status?.phase === "Running")) {
        const job = await client.get<V1Job>(JOBS, ns, a.status?.jobName ?? "").catch(() => undefined);
        const pods = await client
          .list<V1Pod>(PODS, ns, { labelSelector: `job-name=${a.status?.jobName}` })
          .catch(() => ({ items: [] as V1Pod[] }));
        stuck.push(
          `${a.metadata.name}: job ${JSON.stringify(job?.status ?? "missing")} pods ${pods.items
            .map(
              (p) =>
                `${p.metadata?.name}=${p.status?.phase} finish-at=${p.metadata?.annotations?.["harness.test.example/finish-at"] ?? "?"}`,
            )
            .join(",")} controller=${replica.controller ? "running" : "none"} leader=${replica.isLeader}`,
        );
      }
      throw new Error(
        `${e.message}\nAgents: ${phases.join(" ")}\n${stuck.join("\n")}\nlog:\n${logs.slice(-60).join("\n")}`,
      );
    };
    try {
      await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
      const names = ["m-1", "m-2", "m-3", "m-4", "m-5"];
      for (const n of names) await createAgent(client, ns, n, "slow");
      for (const n of names) await waitForPhase(client, ns, n, ["Running", "Succeeded"]);
      await restartApiServer(plane.stateFile);
      // Every component reconnects with its own backoff (KCM, scheduler, kwok, the controller): be generous.
      await allSucceeded(names, 180_000).catch(explain);
      const list = await client.list<Agent>(AGENTS, ns);
      for (const a of list.items.filter((x) => names.includes(x.metadata.name ?? ""))) {
        expect(a.status?.output, `${a.metadata.name}'s output`).toContain("survived");
      }
    } finally {
      await replica.stop();
    }
  }, 300_000);

  it("two replicas, the API server restarted: whoever leads afterwards finishes every in-flight run", async () => {
    await createStation(client, ns, "handover", "def", {
      successfulRunsHistoryLimit: 50,
      annotations: podScriptAnnotations({ exitCode: 0, runTime: "8s", logs: { agent: "handed over" } }),
    });
    const logs: string[] = [];
    const clients = [await clientFor(kubeConfigOf(plane)), await clientFor(kubeConfigOf(plane))];
    const replicas = await Promise.all(
      ["r-a", "r-b"].map((id, i) =>
        startReplica(clients[i] as KubeClient, ns, id, { log: (m) => logs.push(`${id}: ${m}`) }),
      ),
    );
    const leaders = () => replicas.filter((r) => r.isLeader && r.controller?.synced);
    const explain = async (e: Error): Promise<never> => {
      const agents = await client.list<Agent>(AGENTS, ns).catch(() => ({ items: [] as Agent[] }));
      const phases = agents.items
        .filter((a) => a.spec.stationRef === "handover")
        .map((a) => `${a.metadata.name}=${a.status?.phase ?? "Pending"}`);
      const stuck: string[] = [];
      for (const a of agents.items.filter((x) => x.status?.phase === "Running")) {
        const job = await client.get<V1Job>(JOBS, ns, a.status?.jobName ?? "").catch(() => undefined);
        // The pod's own view too: a Job still "active" whose pod ended points at the plane, not the controller.
        const pods = await client
          .list<V1Pod>(PODS, ns, { labelSelector: `job-name=${a.status?.jobName}` })
          .catch(() => ({ items: [] as V1Pod[] }));
        const podView = pods.items.map(
          (p) =>
            `${p.metadata?.name}=${p.status?.phase} finish-at=${p.metadata?.annotations?.["harness.test.example/finish-at"] ?? "?"}`,
        );
        stuck.push(
          `${a.metadata.name}: job ${JSON.stringify(job?.status ?? "missing")} pods ${podView.join(",")}`,
        );
      }
      const who = replicas.map(
        (r) =>
          `${r.elector.isLeader ? "leader" : "standby"}(controller=${r.controller ? (r.controller.synced ? "synced" : "starting") : "none"}, reconciles=${r.controller?.reconciles ?? 0})`,
      );
      throw new Error(
        `${e.message}\nAgents: ${phases.join(" ")}\n${stuck.join("\n")}\nreplicas: ${who.join(", ")}\nlog:\n${logs.slice(-80).join("\n")}`,
      );
    };
    try {
      await eventually("one leader", async () => leaders().length === 1);
      const names = ["h-1", "h-2", "h-3", "h-4", "h-5"];
      for (const n of names) await createAgent(client, ns, n, "handover");
      for (const n of names) await waitForPhase(client, ns, n, ["Running", "Succeeded"]);
      await restartApiServer(plane.stateFile);
      await allSucceeded(names, 180_000).catch(explain);
      await eventually(
        "one synced leader after the restart",
        async () => leaders().length === 1,
        30_000,
      ).catch(explain);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await Promise.all(clients.map((c) => c.close()));
    }
  }, 300_000);
});
