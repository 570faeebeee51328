/**
 * The second and third hardening rounds on a real API server and controller (docs/security.md): a
 * Station template that would hand the run pod the controller's powers, another run's secrets or
 * the node (the allowlist of issue 41), and an
 * Agent that would deliver outside its bounds, fail at Pending naming the field with no Job
 * created; a terminal status the API server refuses does not leave the Agent Running.
 */
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Executor } from "../../../src/controller/executor.js";
import { RunMemory } from "../../../src/controller/memory.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import type { ControllerReplica } from "../../../src/controller/process.js";
import type { KubeEvent } from "../../../src/core/actions.js";
import { jobNameFor } from "../../../src/core/run-job/names.js";
import type { Agent } from "../../../src/core/types.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, resourcePath, STATIONS } from "../../../src/kube/resources.js";
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
  ns = await createTestNamespace("ctrl-hard");
  await createDefinition(client, ns, "def");
  await client.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "deliver" },
    spec: {
      prompt: "Fix it.",
      model: "claude-sonnet-5",
      resources: { repos: [{ name: "app", url: "https://github.com/acme/app.git" }] },
      delivery: { pullRequest: { tokenSecret: "GITHUB_TOKEN" } },
    },
  });
  replica = await startReplica(await clientFor(kubeConfig()), ns, "replica-h");
  await eventually("leadership", async () => replica.isLeader && replica.controller?.synced);
});

afterAll(async () => {
  await replica?.stop();
  await client?.close();
});

async function stationWith(
  name: string,
  def: string,
  podSpec: Record<string, unknown>,
  spec: Record<string, unknown> = {},
) {
  await client.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: def,
      template: { spec: { containers: [{ name: "agent", image: "x.test/a:1" }], ...podSpec } },
      ...spec,
    },
  });
}

async function agentOn(name: string, station: string, spec: Record<string, unknown> = {}) {
  await client.create(AGENTS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name },
    spec: { stationRef: station, parameters: { topic: "x" }, ...spec },
  });
}

async function failsNamingTheField(name: string, field: string): Promise<Agent> {
  const agent = await waitForPhase(client, ns, name, ["Failed", "Succeeded", "Running"]);
  expect(agent.status?.phase).toBe("Failed");
  expect(agent.status?.failureReason).toContain(field);
  expect(await client.get<V1Job>(JOBS, ns, jobNameFor(name))).toBeUndefined();
  return agent;
}

const T = "spec.template.spec";

describe("the Station template policy, attacked", () => {
  it.each([
    [
      "sa",
      "the controller's ServiceAccount with its token projected",
      {
        serviceAccountName: "agent-controller",
        automountServiceAccountToken: false,
        volumes: [{ name: "tok", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } }],
      },
      `${T}.serviceAccountName`,
    ],
    [
      "tok",
      "a projected token beside the default ServiceAccount",
      { volumes: [{ name: "tok", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } }] },
      `${T}.volumes[0] (tok): projected volumes are not allowed`,
    ],
    [
      "secret",
      "agent-secrets mounted whole",
      { volumes: [{ name: "s", secret: { secretName: "agent-secrets" } }] },
      `${T}.volumes[0] (s): secret volumes are not allowed`,
    ],
    ["pid", "shareProcessNamespace", { shareProcessNamespace: true }, `${T}.shareProcessNamespace`],
    [
      "spy",
      "a root sidecar on the witness's result volume",
      {
        containers: [
          { name: "agent", image: "x.test/a:1" },
          {
            name: "spy",
            image: "x.test/s:1",
            securityContext: { runAsUser: 0 },
            volumeMounts: [{ name: "agent-result", mountPath: "/r" }],
          },
        ],
      },
      `${T}.containers[1].volumeMounts`,
    ],
    [
      "hook",
      "a postStart hook in the agent container",
      {
        containers: [
          { name: "agent", image: "x.test/a:1", lifecycle: { postStart: { exec: { command: ["id"] } } } },
        ],
      },
      `${T}.containers[0].lifecycle.postStart`,
    ],
  ])("%s: %s", async (id, _, podSpec, field) => {
    await stationWith(`stn-${id}`, "def", podSpec);
    await agentOn(`run-${id}`, `stn-${id}`);
    const agent = await failsNamingTheField(`run-${id}`, field);
    expect(agent.status?.failureReason).toMatch(/^invalid Station template: /);
  });
});

describe("the Station template allowlist, attacked (issue 41: A1, A2, M4, L1, L2)", () => {
  const agentWith = (over: Record<string, unknown>) => ({
    containers: [{ name: "agent", image: "x.test/a:1", ...over }],
  });
  it.each([
    [
      "keyref",
      "the agent container reads agent-realtime's signing key",
      agentWith({
        env: [{ name: "K", valueFrom: { secretKeyRef: { name: "agent-realtime", key: "signing-key" } } }],
      }),
      `${T}.containers[0].env[0].valueFrom.secretKeyRef: Secret "agent-realtime" is not allowed`,
    ],
    [
      "envfrom",
      "an init container takes a whole Secret as its env",
      {
        initContainers: [
          { name: "grab", image: "x.test/g:1", envFrom: [{ secretRef: { name: "agent-realtime" } }] },
        ],
      },
      `${T}.initContainers[0].envFrom[0].secretRef: Secret "agent-realtime" is not allowed`,
    ],
    [
      "nullfirst",
      "hostPath behind a null first key, which the API server keeps",
      {
        ...agentWith({ volumeMounts: [{ name: "host", mountPath: "/host" }] }),
        volumes: [{ name: "host", emptyDir: null, hostPath: { path: "/" } }],
      },
      "hostPath volume host is not allowed",
    ],
    [
      "clone",
      "an ephemeral volume cloning another claim",
      {
        volumes: [
          {
            name: "scratch",
            ephemeral: {
              volumeClaimTemplate: {
                spec: {
                  accessModes: ["ReadWriteOnce"],
                  resources: { requests: { storage: "1Gi" } },
                  dataSourceRef: { kind: "PersistentVolumeClaim", name: "team-b-data" },
                },
              },
            },
          },
        ],
      },
      `${T}.volumes[0] (scratch): ephemeral.volumeClaimTemplate.spec.dataSourceRef is not allowed`,
    ],
    [
      "witness",
      "a Station volume over the witness at /agent/bin",
      {
        ...agentWith({ volumeMounts: [{ name: "bin", mountPath: "/agent/bin" }] }),
        volumes: [{ name: "bin", emptyDir: {} }],
      },
      `${T}.containers[0].volumeMounts[0].mountPath "/agent/bin" is not allowed`,
    ],
    [
      "nodename",
      "a pod pinned to a node past the scheduler",
      { nodeName: "control-plane-0" },
      `${T}.nodeName is not allowed`,
    ],
    [
      "dns",
      "the courier's DNS sent elsewhere",
      { dnsPolicy: "None", dnsConfig: { nameservers: ["10.0.0.9"] } },
      `${T}.dnsConfig is not allowed`,
    ],
  ])("%s: %s", async (id, _, podSpec, field) => {
    await stationWith(`stn-al-${id}`, "def", podSpec);
    await agentOn(`run-al-${id}`, `stn-al-${id}`);
    const agent = await failsNamingTheField(`run-al-${id}`, field);
    expect(agent.status?.failureReason).toMatch(/^invalid Station template: /);
  });

  it("the API server keeps the null that hid the hostPath, so only normalising first refuses it", async () => {
    const stored = await client.get<{ spec: { template: { spec: { volumes: unknown[] } } } }>(
      STATIONS,
      ns,
      "stn-al-nullfirst",
    );
    expect(stored?.spec.template.spec.volumes[0]).toEqual({
      name: "host",
      emptyDir: null,
      hostPath: { path: "/" },
    });
  });
});

describe("deliveries within bounds, attacked", () => {
  beforeAll(async () => {
    // Room for every Agent this block fails on it: with the default history of 3, four failed in
    // the same second keep the first three by name and prune the fourth before the test reads it
    // (docs/reconcile.md#concurrency-and-pruning).
    await stationWith("stn-deliver", "deliver", {}, { failedRunsHistoryLimit: 10 });
    // A prefix is an opt-in narrowing (docs/security.md#deliveries): this definition sets one.
    await client.create(AGENT_DEFINITIONS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "AgentDefinition",
      metadata: { name: "deliver-narrow" },
      spec: {
        prompt: "Fix it.",
        model: "claude-sonnet-5",
        resources: { repos: [{ name: "app", url: "https://github.com/acme/app.git" }] },
        delivery: { pullRequest: { tokenSecret: "GITHUB_TOKEN", branchPrefix: "agent/" } },
      },
    });
    await stationWith("stn-deliver-narrow", "deliver-narrow", {});
  });

  it("a branch outside the prefix a definition sets (release)", async () => {
    await agentOn("br-release", "stn-deliver-narrow", { branch: "release" });
    await failsNamingTheField("br-release", 'spec.branch "release" is outside the branch prefix "agent/"');
  });

  it("any owner/name is a targetRepo by default (the Agent seed): a fork's upstream gets its Job", async () => {
    await agentOn("tr-other", "stn-deliver", { targetRepo: "upstream/app" });
    const job = await eventually("tr-other's Job", () => client.get<V1Job>(JOBS, ns, jobNameFor("tr-other")));
    expect(job.metadata?.name).toBe(jobNameFor("tr-other"));
  });

  it("a branch git would read as an option or a range fails at Pending, naming it", async () => {
    for (const [i, branch] of ["-f", "agent/..", "agent/a..b", "agent/.hidden"].entries()) {
      await agentOn(`br-bad-${i}`, "stn-deliver", { branch });
      await failsNamingTheField(
        `br-bad-${i}`,
        `spec.branch ${JSON.stringify(branch)} is not a valid git branch name`,
      );
    }
  });
});

describe("a bill the agent cannot inflate, attacked", () => {
  it("a forged result line's cost is not believed: priced from its tokens, the figure kept, an Event", async () => {
    const forged = [
      JSON.stringify({ type: "system", subtype: "init", model: "claude-opus-5-5", session_id: "s-1" }),
      // What one forged line once set status.costUSD to; at 1e21 the old formatting broke the CRD's pattern.
      JSON.stringify({
        type: "result",
        subtype: "success",
        session_id: "s-1",
        total_cost_usd: 1e15 + 0.393216,
        usage: { input_tokens: 1000, output_tokens: 500 },
      }),
    ].join("\n");
    await createStation(client, ns, "stn-forged", "def", {
      annotations: podScriptAnnotations({ exitCode: 0, logs: { agent: forged } }),
    });
    await createAgent(client, ns, "forged-cost", "stn-forged");
    const done = await waitForPhase(client, ns, "forged-cost", ["Succeeded", "Failed"]);
    expect(done.status?.phase).toBe("Succeeded");
    // claude-opus-5-5: 4 / 20 USD per million tokens.
    expect(done.status?.costUSD).toBe("0.014");
    expect(done.status?.costSource).toBe("estimated");
    expect(done.status?.costReportRejected).toBe("1000000000000000.375");
    type Listed = { reason: string; note?: string; regarding: { uid: string } };
    const event = await eventually("the CostReportRejected Event", async () => {
      const l = await client.request<{ items: Listed[] }>("GET", resourcePath(KUBE_EVENTS, ns));
      return l.items.find((e) => e.reason === "CostReportRejected" && e.regarding.uid === done.metadata.uid);
    });
    expect(event.note).toContain("$1000000000000000.375");
  });
});

describe("a terminal status the API server refuses", () => {
  it("is written without the refused field, the Agent leaves Running, an Event says so", async () => {
    // A namespace no controller serves: nothing else writes this Agent's status meanwhile.
    const quiet = await createTestNamespace("ctrl-hard-quiet");
    await client.create(AGENTS, quiet, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "refused-status" },
      spec: { stationRef: "any" },
    });
    const created = await eventually("the Agent", () => getAgent(client, quiet, "refused-status"));
    const events: KubeEvent[] = [];
    const executor = new Executor({
      client,
      namespace: quiet,
      memory: new RunMemory(),
      metrics: new ControllerMetrics(),
      provider: () => {
        throw new Error("no provider");
      },
      kubeEvents: { record: (_: unknown, e: KubeEvent) => events.push(e) } as never,
      now: () => Date.now(),
      log: () => {},
    });
    const ref = { namespace: quiet, name: "refused-status", uid: created.metadata.uid ?? "" };
    // The value a forged cost once produced: the CRD's pattern refuses it.
    const status = {
      phase: "Succeeded",
      exitCode: 0,
      completedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      costUSD: "1e+21.555072",
      costSource: "reported",
    };
    const latest = (await getAgent(client, quiet, "refused-status")) as Agent;
    const report = await executor.execute(latest, [
      {
        id: "patch-status",
        type: "patchStatus",
        agent: ref,
        resourceVersion: latest.metadata.resourceVersion ?? "",
        status,
      } as never,
    ]);
    expect(report.succeeded).toEqual(["patch-status"]);
    const after = (await getAgent(client, quiet, "refused-status")) as Agent;
    expect(after.status?.phase).toBe("Succeeded");
    expect(after.status?.costUSD).toBeUndefined();
    expect(after.status?.costSource).toBe("reported");
    expect(events[0]).toMatchObject({ reason: "StatusFieldsDropped" });
    expect(events[0]?.note).toContain("status.costUSD");
  });
});
