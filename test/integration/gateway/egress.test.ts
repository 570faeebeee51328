/**
 * Egress behind the model gateway, end to end on the local plane (docs/gateway.md#egress): the
 * controller (gateway and egress proxy on) builds the run's Job with one egress credential per
 * program; "the programs" (this test, in the kwok pod's place) reach the network the way the run
 * pod's own code does (src/run-pod/common/http-dispatcher.ts, with each container's env from the
 * Job) through a real gateway egress listener in cluster mode, acting as the gateway's
 * ServiceAccount with the Role components/gateway ships. The init reaches its spec.files host, the
 * agent reaches what its Station lists and nothing else; a forged credential reaches nothing. The
 * refusals end in the Agent's status.egress, a Warning Event EgressRefused and the sinks' egress
 * event.
 *
 * The destinations listen on this machine's own non-loopback address: the pod env's NO_PROXY
 * names the loopback, so a request there would not go through the proxy at all; and the address is
 * private, so the test gateway lets it in (GATEWAY_EGRESS_PRIVATE_CIDRS), as an installation with
 * an in-cluster git host would.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import type { V1EnvVar, V1Job } from "@kubernetes/client-node";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { LABEL_AGENT } from "../../../src/core/run-job/layout.js";
import type { Agent } from "../../../src/core/types.js";
import { type ClusterPorts, clusterPorts } from "../../../src/gateway/cluster-ports.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { KUBE_EVENTS } from "../../../src/kube/event-writer.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, resourcePath, STATIONS } from "../../../src/kube/resources.js";
import { outboundDispatcher } from "../../../src/run-pod/common/http-dispatcher.js";
import { SinkDispatcher } from "../../../src/sinks/index.js";
import { createTestNamespace, kubeConfig, setPodLogs } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import { basicProxyAuth, startTestTarget, type TestTarget } from "../../support/http-proxy.js";
import { clientFor, startReplica, testConfig, waitForPhase } from "../controller/helpers.js";
import { impersonating, installGatewayRole, startTestGateway, type TestGateway } from "./gateway-cluster.js";

const KEY = Buffer.from("egress-test-gateway-key-of-32-bytes!");
const quiet = { info() {}, warn() {}, error() {} };

/** This machine's first non-loopback IPv4 address: where the destinations listen. */
function machineAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  throw new Error("no non-loopback IPv4 address on this machine");
}

let admin: KubeClient;
let gatewayClient: KubeClient;
let ns: string;
let ports: ClusterPorts;
let gateway: TestGateway;
let replica: ControllerReplica | undefined;
/** The Agent's spec.files host (the init's), what the Station lists (the agent's), nobody's, the sink. */
let files: TestTarget;
let docs: TestTarget;
let elsewhere: TestTarget;
let sink: TestTarget;
const ip = machineAddress();
const secretsDir = mkdtempSync(join(tmpdir(), "gw-egress-secrets-"));
const at = (t: TestTarget, path: string) => `http://${ip}:${t.port}${path}`;

/** The env of one container of the Job's pod template (init containers included). */
function containerEnv(job: V1Job, name: string): Record<string, string> {
  const spec = job.spec?.template.spec;
  const c = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].find((x) => x.name === name);
  if (!c) throw new Error(`the Job has no container ${name}`);
  return Object.fromEntries(
    (c.env ?? []).flatMap((e: V1EnvVar) => (e.value !== undefined ? [[e.name, e.value]] : [])),
  );
}

/**
 * A GET as the run pod's own programs make it, with that container's env: the answer, or the
 * proxy's refusal as undici reports it (it tunnels http:// too, and fails on a CONNECT not 200).
 */
async function getAs(env: Record<string, string>, url: string): Promise<{ status: number; body: string }> {
  const dispatcher = outboundDispatcher({}, env);
  try {
    const res = await request(url, { dispatcher });
    return { status: res.statusCode, body: await res.body.text() };
  } catch (err) {
    const refused = /Proxy response \((\d+)\) !== 200/.exec((err as Error).message);
    if (!refused) throw err;
    return { status: Number(refused[1]), body: "" };
  } finally {
    await dispatcher.close();
  }
}

/** A CONNECT with the given proxy credential, answered by the listener: its status line and body. */
async function connectAs(credential: string, target: string): Promise<{ status: string; body: string }> {
  const socket = connect(gateway.egressPort ?? 0, "127.0.0.1");
  await once(socket, "connect");
  socket.write(
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${basicProxyAuth("agent", credential)}\r\n\r\n`,
  );
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  await once(socket, "close");
  const text = Buffer.concat(chunks).toString("utf8");
  const [head = "", body = ""] = text.split("\r\n\r\n");
  return { status: head.split("\r\n")[0] ?? "", body };
}

/** The egress credential in a container's HTTPS_PROXY (http://<role>:<credential>@host:port). */
const credentialOf = (env: Record<string, string>) =>
  decodeURIComponent(new URL(env.HTTPS_PROXY ?? "").password);

beforeAll(async () => {
  admin = await clientFor(kubeConfig());
  ns = await createTestNamespace("gw-egress");
  await installGatewayRole(admin, ns);
  gatewayClient = await impersonating(`system:serviceaccount:${ns}:agent-gateway`);
  [files, docs, elsewhere, sink] = await Promise.all([
    startTestTarget("notes", ip),
    startTestTarget("docs", ip),
    startTestTarget("secret sink", ip),
    startTestTarget(),
  ]);
  await admin.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def" },
    spec: {
      prompt: "Summarise the notes.",
      model: "claude-sonnet-4-6",
      execution: "interactive",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
      output: { sinks: [{ type: "http", url: `${sink.origin}/events` }] },
    },
  });
  await admin.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "fenced" },
    spec: {
      agentDefRef: "def",
      egress: { allowHosts: [`${ip}:${docs.port}`] },
      template: {
        // The kwok pod stays Running long enough for "the programs" to reach out.
        metadata: { annotations: { "test.example/run-time": "20s" } },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });
  ports = clusterPorts({
    kube: gatewayClient,
    namespace: ns,
    agentSecretsDir: secretsDir,
    replica: "agent-gateway-test-0",
    logger: quiet,
  });
  gateway = await startTestGateway({
    ports: () => ports,
    upstreams: {
      anthropic: "http://127.0.0.1:9",
      openai: "http://127.0.0.1:9",
      gemini: "http://127.0.0.1:9",
    },
    credentialKey: KEY,
    host: "127.0.0.1",
    egress: { privateCidrs: [`${ip}/32`] },
  });
  const config = testConfig(ns, "agent-controller-egress-0");
  config.gateway = {
    url: `http://127.0.0.1:${gateway.port}`,
    credentialKey: KEY,
    egressProxyUrl: `http://127.0.0.1:${gateway.egressPort}`,
  };
  // The controller's own sink delivery, as main.ts wires it (no header blocks here).
  const sinks = new SinkDispatcher({
    readSecretKey: async () => undefined,
    retry: { attempts: 3, baseMs: 50, maxMs: 200 },
    log: quiet,
  });
  replica = await startReplica(admin, ns, "agent-controller-egress-0", { config, sinks });
}, 60_000);

afterAll(async () => {
  await replica?.stop();
  await gateway?.close();
  await ports?.close();
  await Promise.all([files, docs, elsewhere, sink].map((t) => t?.close()));
  await gatewayClient?.close();
  await admin?.close();
  rmSync(secretsDir, { recursive: true, force: true });
});

describe("egress through the gateway: each program of a run reaches its own destinations only", () => {
  it("the init reaches its files, the agent what its Station lists; the rest is refused and ends in the Agent's status, an Event and the sinks", async () => {
    await setPodLogs(ns, { [LABEL_AGENT]: "fenced-run" }, { agent: ["done"] });
    await admin.create(AGENTS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "fenced-run" },
      spec: { stationRef: "fenced", files: [{ path: "notes.txt", url: at(files, "/notes.txt") }] },
    });
    const running = await waitForPhase(admin, ns, "fenced-run", ["Running"]);
    const job = await eventually("the run's Job", () =>
      admin.get<V1Job>(JOBS, ns, running.status?.jobName ?? ""),
    );
    const init = containerEnv(job, "init");
    const agent = containerEnv(job, "agent");
    // Each program its own proxy credential; the model's host is reached directly.
    expect(new URL(init.HTTPS_PROXY ?? "").username).toBe("init");
    expect(new URL(agent.HTTPS_PROXY ?? "").username).toBe("agent");
    expect(credentialOf(init)).toMatch(/^agx1\./);
    expect(credentialOf(agent)).not.toBe(credentialOf(init));
    expect(agent.NO_PROXY?.split(",")).toContain("127.0.0.1");

    // The init fetches its file through the proxy; the agent may not.
    expect(await getAs(init, at(files, "/notes.txt"))).toEqual({ status: 200, body: "notes" });
    expect((await getAs(agent, at(files, "/notes.txt"))).status).toBe(403);
    const refusedFiles = await connectAs(credentialOf(agent), `${ip}:${files.port}`);
    expect(refusedFiles.status).toBe("HTTP/1.1 403 Forbidden");
    expect(refusedFiles.body).toMatch(
      new RegExp(
        `^gateway egress: ${esc(`${ip}:${files.port}`)} refused for the agent of Agent ${esc(ns)}/fenced-run: not a destination of the agent \\(it may reach [^)]*${esc(`${ip}:${docs.port}`)}[^)]*\\); its Station may list more hosts in spec\\.egress\\.allowHosts$`,
      ),
    );
    // The agent reaches what its Station lists, and nothing else: not another port, not another host.
    expect(await getAs(agent, at(docs, "/guide"))).toEqual({ status: 200, body: "docs" });
    expect((await getAs(agent, at(elsewhere, "/upload"))).status).toBe(403);
    expect((await getAs(init, at(elsewhere, "/upload"))).status).toBe(403);
    // A forged credential, and the run's own model credential, reach nothing.
    const forged = `${credentialOf(agent).slice(0, -4)}AAAA`;
    expect((await connectAs(forged, `${ip}:${docs.port}`)).status).toBe(
      "HTTP/1.1 407 Proxy Authentication Required",
    );
    expect((await connectAs(agent.ANTHROPIC_API_KEY ?? "", `${ip}:${docs.port}`)).status).toBe(
      "HTTP/1.1 407 Proxy Authentication Required",
    );
    // Only the allowed requests arrived.
    expect(files.seen.map((s) => s.path)).toEqual(["/notes.txt"]);
    expect(docs.seen.map((s) => s.path)).toEqual(["/guide"]);
    expect(elsewhere.seen).toEqual([]);

    // The Warning Event, as it happened: one per destination and program.
    const events = await eventually("the EgressRefused Events", async () => {
      const listed = await admin.request<{
        items: { reason: string; type: string; note: string; regarding: { name: string } }[];
      }>("GET", resourcePath(KUBE_EVENTS, ns));
      const mine = listed.items.filter(
        (e) => e.reason === "EgressRefused" && e.regarding.name === "fenced-run",
      );
      return mine.length >= 3 ? mine : undefined;
    });
    expect(events.every((e) => e.type === "Warning")).toBe(true);
    expect(events.map((e) => e.note)).toContain(refusedFiles.body);

    // The run ends: status.egress counts the refusals, and the sinks got the egress event.
    const done = await waitForPhase(admin, ns, "fenced-run", ["Succeeded", "Failed"], 90_000);
    expect(done.status?.egress).toEqual({
      refused: 4,
      destinations: [
        `agent ${ip}:${elsewhere.port}`,
        `agent ${ip}:${files.port}`,
        `init ${ip}:${elsewhere.port}`,
      ].sort(),
    });
    const delivered = await eventually("the sinks' egress event", () => {
      const bodies = sink.seen.map((s) => s.body).filter((b) => b.includes('"kind":"egress"'));
      return bodies.length > 0 ? bodies : undefined;
    });
    expect(delivered).toHaveLength(1);
    expect(JSON.parse(delivered[0] ?? "{}")).toMatchObject({
      source: { agent: "fenced-run", namespace: ns },
      event: { kind: "egress", status: "refused", refused: 4 },
    });

    // An ended run's programs reach nothing any more.
    const ended: Agent | undefined = await admin.get<Agent>(AGENTS, ns, "fenced-run");
    expect(ended?.status?.phase).toBe(done.status?.phase);
    // (the gateway's answer for an active run is reused a few seconds: docs/gateway.md#which-runs-may-call)
    const after = await eventually("the ended run's credential refused", async () => {
      const a = await connectAs(credentialOf(agent), `${ip}:${docs.port}`);
      return a.status === "HTTP/1.1 403 Forbidden" ? a : undefined;
    });
    expect(after.body).toMatch(/the run has ended \(phase (Succeeded|Failed)\)$/);
  });
});

const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
