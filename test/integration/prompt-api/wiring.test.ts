/**
 * The prompt API as the controller wires it: Agents, Jobs and pods read from the real API server,
 * status.sessionId patched there. The run pod's address comes from kwok (a non-routable pod IP),
 * so the forward is redirected to a fake supervisor on 127.0.0.1 that plays that pod.
 */
import { createHmac } from "node:crypto";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controllerPromptApi } from "../../../src/controller/prompt-api-wiring.js";
import { KubeClient } from "../../../src/kube/client.js";
import { AGENTS, JOBS, PODS } from "../../../src/kube/resources.js";
import { type Forward, sha256Hex, undiciForward } from "../../../src/prompt-api/index.js";
import { type FakeSupervisor, startFakeSupervisor } from "../../fakes/supervisor.js";
import { createTestNamespace, eventually, kubeConfig, podScriptAnnotations } from "../../harness/context.js";

const API_TOKEN = "caller-token";
const SIGNING_KEY = "signing-key-for-tests";

type AgentObj = {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string };
  status?: { phase?: string; jobName?: string; sessionId?: string };
};

let ns: string;
let client: KubeClient;
let supervisor: FakeSupervisor | undefined;
const forwarded: string[] = [];
// kwok's pod IPs lead nowhere; the supervisor for that pod listens on loopback.
const redirect: Forward = (req) => {
  forwarded.push(req.url);
  if (!supervisor) throw new Error("no supervisor started");
  const path = new URL(req.url).pathname;
  return undiciForward({ ...req, url: `${supervisor.baseUrl}${path}` });
};

async function createAgent(name: string): Promise<AgentObj> {
  const res = await client.create(AGENTS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name, namespace: ns },
    spec: { stationRef: "rt-station" },
  });
  return res.object as unknown as AgentObj;
}

async function markRunning(agent: AgentObj, jobName: string): Promise<void> {
  const outcome = await client.patchStatus(AGENTS, ns, agent.metadata.name, agent.metadata.resourceVersion, {
    phase: "Running",
    jobName,
    startedAt: new Date().toISOString(),
  });
  expect(outcome).toBe("ok");
}

async function createJob(name: string, realtime: boolean, suspend = false): Promise<void> {
  const labels: Record<string, string> = { "agents.re-cinq.com/component": "job" };
  if (realtime) labels["agents.re-cinq.com/execution"] = "realtime";
  const job: V1Job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: ns, labels },
    spec: {
      backoffLimit: 0,
      ...(suspend ? { suspend: true } : {}),
      template: {
        metadata: { labels, annotations: podScriptAnnotations({ exitCode: 0, runTime: "10m" }) },
        spec: { restartPolicy: "Never", containers: [{ name: "agent", image: "agent:test" }] },
      },
    },
  };
  await client.create(JOBS, ns, job);
}

function post(app: ReturnType<typeof controllerPromptApi>, path: string, body?: unknown, token = API_TOKEN) {
  return app.request(path, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

describe("prompt API wired to the API server", () => {
  let app: ReturnType<typeof controllerPromptApi>;

  beforeAll(async () => {
    ns = await createTestNamespace("prompt-api");
    client = await KubeClient.fromKubeConfig(kubeConfig());
    app = controllerPromptApi({
      config: { namespace: ns, realtimeApiToken: API_TOKEN, realtimeSigningKey: SIGNING_KEY },
      client,
      forward: redirect,
      logger: { info() {}, warn() {}, error() {} },
    });
  });

  afterAll(async () => {
    await supervisor?.stop();
    await client?.close();
  });

  it("refuses a wrong bearer token", async () => {
    const res = await post(app, `/v1/namespaces/${ns}/agents/x/prompt`, { prompt: "hi" }, "wrong");
    expect(res.status).toBe(401);
  });

  it("answers 404 for an Agent the API server does not have", async () => {
    const res = await post(app, `/v1/namespaces/${ns}/agents/nobody/prompt`, { prompt: "hi" });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "Agent nobody not found" });
  });

  it("answers 409 for a Pending Agent", async () => {
    await createAgent("pending-one");
    const res = await post(app, `/v1/namespaces/${ns}/agents/pending-one/prompt`, { prompt: "hi" });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: "Agent pending-one is Pending, not a running session" });
  });

  it("answers 409 for a Running Agent whose Job is not a realtime run", async () => {
    const agent = await createAgent("plain-run");
    await createJob("plain-run-job", false);
    await markRunning(agent, "plain-run-job");
    const res = await post(app, `/v1/namespaces/${ns}/agents/plain-run/prompt`, { prompt: "hi" });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: "Agent plain-run is not a realtime run" });
  });

  it("answers 503 not serving yet, forwarding nothing, to a Ready pod that claims the Job by job-name but is not the Job's", async () => {
    const agent = await createAgent("claimed");
    // The Job makes no pod of its own (suspended); someone who may create pods makes one that
    // carries the Job's job-name and realtime labels, and a controller-uid of its choosing.
    await createJob("claimed-job", true, true);
    await markRunning(agent, "claimed-job");
    const impostor: V1Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "claimed-impostor",
        namespace: ns,
        labels: {
          "job-name": "claimed-job",
          "batch.kubernetes.io/job-name": "claimed-job",
          "controller-uid": "00000000-0000-0000-0000-000000000000",
          "agents.re-cinq.com/component": "job",
          "agents.re-cinq.com/execution": "realtime",
        },
        annotations: podScriptAnnotations({ exitCode: 0, runTime: "10m" }),
      },
      spec: { restartPolicy: "Never", containers: [{ name: "agent", image: "agent:test" }] },
    };
    await client.create(PODS, ns, impostor);
    await eventually("the impostor pod to be Ready with an IP", async () => {
      const p = await client.get<V1Pod>(PODS, ns, "claimed-impostor");
      const ready = p?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return ready && p?.status?.podIP ? p : undefined;
    });
    const before = forwarded.length;

    const res = await post(app, `/v1/namespaces/${ns}/agents/claimed/prompt`, { prompt: "to whom?" });

    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toEqual({ error: "the session is not serving yet" });
    expect(forwarded.length).toBe(before);
  });

  it("forwards to the run pod with the run's own token and records the learned sessionId", async () => {
    const agent = await createAgent("live");
    const runToken = createHmac("sha256", SIGNING_KEY).update(agent.metadata.uid).digest("hex");
    supervisor = await startFakeSupervisor({
      tokenSha256: sha256Hex(runToken),
      sessionIdAfterFirstTurn: "sess-42",
      autoCompleteTurns: true,
    });
    await createJob("live-job", true);
    await markRunning(agent, "live-job");

    // Until kwok has the pod Running and Ready the session is not serving yet.
    const first = await eventually("the realtime pod to serve", async () => {
      const res = await post(app, `/v1/namespaces/${ns}/agents/live/prompt`, { prompt: "first" });
      return res.status === 202 ? res : undefined;
    });
    expect(await first.json()).toEqual({ turn: 1, queued: 1, sessionId: "" });
    expect(forwarded.at(-1)).toMatch(/^http:\/\/[0-9.]+:8090\/v1\/prompt$/);
    expect(supervisor.requests.at(-1)?.authorization).toBe(`Bearer ${runToken}`);

    const second = await post(app, `/v1/namespaces/${ns}/agents/live/prompt`, { prompt: "second" });
    expect(second.status).toBe(202);
    expect(await second.json()).toMatchObject({ turn: 2, sessionId: "sess-42" });
    const stored = await client.get<AgentObj>(AGENTS, ns, "live");
    expect(stored?.status?.sessionId).toBe("sess-42");
    expect(stored?.status?.phase).toBe("Running");

    const close = await post(app, `/v1/namespaces/${ns}/agents/live/close`);
    expect(close.status).toBe(202);
  });
});
