/**
 * A gateway run priced from the gateway's meter, end to end on the local plane
 * (docs/gateway.md#metering): the controller (gateway on) builds the run's Job with a credential
 * and the model-gateway annotation; "the agent" (this test, in the kwok pod's place) calls its
 * model through a real gateway in cluster mode, acting as the gateway's ServiceAccount with the
 * Role components/gateway ships; the pod then prints a forged result line claiming almost nothing.
 * The Agent ends with the metered tokens and cost, and the Station's spend records them, not the
 * figure the agent wrote. The usage records go with their Agent.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControllerReplica } from "../../../src/controller/process.js";
import { ANNOTATION_MODEL_GATEWAY, LABEL_AGENT, LABEL_AGENT_UID } from "../../../src/core/run-job/layout.js";
import type { ModelUsage, Station } from "../../../src/core/types.js";
import { type ClusterPorts, clusterPorts } from "../../../src/gateway/cluster-ports.js";
import type { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, MODEL_USAGES, STATIONS } from "../../../src/kube/resources.js";
import {
  type AnthropicMessagesServer,
  startAnthropicMessages,
} from "../../fakes/models/anthropic-messages.js";
import { createTestNamespace, kubeConfig, setPodLogs } from "../../harness/context.js";
import { eventually } from "../../harness/eventually.js";
import { send } from "../../support/gateway.js";
import { clientFor, getAgent, startReplica, testConfig, waitForPhase } from "../controller/helpers.js";
import {
  agentEnvValue,
  impersonating,
  installGatewayRole,
  startTestGateway,
  type TestGateway,
} from "./gateway-cluster.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const KEY = Buffer.from("metering-test-gateway-key-32-bytes!!");
const quiet = { info() {}, warn() {}, error() {} };

let admin: KubeClient;
let gatewayClient: KubeClient;
let ns: string;
let model: AnthropicMessagesServer;
let ports: ClusterPorts;
let gateway: TestGateway;
let replica: ControllerReplica | undefined;
const secretsDir = mkdtempSync(join(tmpdir(), "gw-metering-secrets-"));

/** What the agent prints: a claude result line claiming a cost and tokens of its choosing. */
const forgedResult = JSON.stringify({
  type: "result",
  subtype: "success",
  is_error: false,
  result: "done",
  session_id: "s-1",
  total_cost_usd: 0.000001,
  usage: { input_tokens: 1, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
});

beforeAll(async () => {
  admin = await clientFor(kubeConfig());
  ns = await createTestNamespace("gw-metering");
  await installGatewayRole(admin, ns);
  gatewayClient = await impersonating(`system:serviceaccount:${ns}:agent-gateway`);
  await admin.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def" },
    spec: {
      prompt: "Summarise the README.",
      model: "claude-sonnet-4-6",
      execution: "interactive",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] },
    },
  });
  await admin.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "metered" },
    spec: {
      agentDefRef: "def",
      budget: { limitUSD: 100, window: "24h" },
      template: {
        // The kwok pod stays Running long enough for "the agent" to make its calls.
        metadata: { annotations: { "test.example/run-time": "20s" } },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });
  writeFileSync(join(secretsDir, "anthropic-key"), "sk-ant-real-key\n");
  model = await startAnthropicMessages();
  ports = clusterPorts({
    kube: gatewayClient,
    namespace: ns,
    agentSecretsDir: secretsDir,
    replica: "agent-gateway-test-0",
    logger: quiet,
  });
  gateway = await startTestGateway({
    ports: () => ports,
    upstreams: { anthropic: model.origin, openai: "http://127.0.0.1:9", gemini: "http://127.0.0.1:9" },
    credentialKey: KEY,
    host: "127.0.0.1",
  });
  // The controller with the gateway on, as AGENT_GATEWAY_URL and its key file turn it on.
  const config = testConfig(ns, "agent-controller-metering-0");
  config.gateway = { url: `http://127.0.0.1:${gateway.port}`, credentialKey: KEY };
  replica = await startReplica(admin, ns, "agent-controller-metering-0", { config });
}, 60_000);

afterAll(async () => {
  await replica?.stop();
  await gateway?.close();
  await ports?.close();
  await model?.close();
  await gatewayClient?.close();
  await admin?.close();
  rmSync(secretsDir, { recursive: true, force: true });
});

describe("a gateway run's cost is the gateway's meter, not its log", () => {
  it("the forged result line is not believed; the Agent and the Station's spend carry the metered calls", async () => {
    await setPodLogs(ns, { [LABEL_AGENT]: "metered-run" }, { agent: [forgedResult] });
    model.script([
      { text: "first answer", usage: { input: 1_000, output: 200 } },
      { text: "second answer", usage: { input: 3_000, output: 600, cacheRead: 500 } },
    ]);
    await admin.create(AGENTS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "metered-run" },
      spec: { stationRef: "metered" },
    });
    const running = await waitForPhase(admin, ns, "metered-run", ["Running"]);
    const uid = running.metadata.uid ?? "";

    // The Job says its run is the gateway's; its agent container holds the run credential only.
    const job = await eventually("the run's Job", () =>
      admin.get<V1Job>(JOBS, ns, running.status?.jobName ?? ""),
    );
    expect(job.metadata?.annotations?.[ANNOTATION_MODEL_GATEWAY]).toBe("anthropic");
    const credential = agentEnvValue(job, "ANTHROPIC_API_KEY");
    expect(credential).toMatch(/^agw1\./);

    // "The agent" calls its model through the gateway: once streamed, once not.
    const headers = { "x-api-key": credential, "anthropic-version": "2023-06-01" };
    const body = (stream: boolean) => ({
      model: "claude-sonnet-4-6",
      max_tokens: 1024,
      stream,
      messages: [{ role: "user", content: "Summarise the README." }],
    });
    const url = `http://127.0.0.1:${gateway.port}`;
    expect((await send(url, "POST", "/v1/messages?beta=true", headers, body(true))).status).toBe(200);
    expect((await send(url, "POST", "/v1/messages", headers, body(false))).status).toBe(200);
    // The provider saw the real key the definition names, never the credential.
    const calls = model.journal().filter((e) => e.path === "/v1/messages");
    expect(calls.map((c) => c.credentialDigests)).toEqual([
      { "x-api-key": sha256("sk-ant-real-key") },
      { "x-api-key": sha256("sk-ant-real-key") },
    ]);

    // The records are durable before the answers end: they are there now, as the gateway's own.
    const records = (
      await admin.list<ModelUsage>(MODEL_USAGES, ns, { labelSelector: `${LABEL_AGENT_UID}=${uid}` })
    ).items;
    expect(records).toHaveLength(1);
    expect(records[0]?.spec).toMatchObject({
      agent: { name: "metered-run", uid },
      vendor: "anthropic",
      replica: "agent-gateway-test-0",
      calls: 2,
      inFlight: 0,
      models: [
        {
          model: "claude-sonnet-4-6",
          inputTokens: 4_000,
          outputTokens: 800,
          cacheReadTokens: 500,
          cacheWriteTokens: 0,
        },
      ],
    });
    expect(records[0]?.metadata.ownerReferences).toEqual([
      { apiVersion: "agents.re-cinq.com/v1beta1", kind: "Agent", name: "metered-run", uid },
    ]);

    // claude-sonnet-4-6: $3 input, $15 output, $0.30 cache read per million tokens.
    const done = await waitForPhase(admin, ns, "metered-run", ["Succeeded", "Failed"], 90_000);
    expect(done.status).toMatchObject({
      phase: "Succeeded",
      costSource: "metered",
      costUSD: "0.02415",
      usage: {
        inputTokens: 4_000,
        outputTokens: 800,
        cacheReadTokens: 500,
        cacheWriteTokens: 0,
        totalTokens: 5_300,
      },
    });
    expect(done.status?.costReportRejected).toBeUndefined();
    const spend = await eventually("the Station's spend", async () => {
      const s = (await admin.get<Station>(STATIONS, ns, "metered"))?.status?.spend ?? [];
      return s.length > 0 ? s : undefined;
    });
    expect(spend).toEqual([expect.objectContaining({ agent: uid, costUSD: "0.02415" })]);

    // The records go with their Agent (its garbage collection).
    await admin.delete(AGENTS, ns, "metered-run");
    await eventually(
      "the usage record collected with its Agent",
      async () => {
        const left = await admin.list<ModelUsage>(MODEL_USAGES, ns, {
          labelSelector: `${LABEL_AGENT_UID}=${uid}`,
        });
        return left.items.length === 0 ? true : undefined;
      },
      60_000,
    );
    expect(await getAgent(admin, ns, "metered-run")).toBeUndefined();
  });

  it("a Station's budget holds in flight: the request whose worst case no longer fits is refused 403 before it reaches the provider", async () => {
    await admin.create(STATIONS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name: "tight" },
      spec: {
        agentDefRef: "def",
        budget: { limitUSD: 0.05, window: "1h" },
        template: {
          metadata: { annotations: { "test.example/run-time": "20s" } },
          spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
        },
      },
    });
    await setPodLogs(ns, { [LABEL_AGENT]: "tight-run" }, { agent: [forgedResult] });
    await admin.create(AGENTS, ns, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "tight-run" },
      spec: { stationRef: "tight" },
    });
    const running = await waitForPhase(admin, ns, "tight-run", ["Running"]);
    const job = await eventually("the run's Job", () =>
      admin.get<V1Job>(JOBS, ns, running.status?.jobName ?? ""),
    );
    const credential = agentEnvValue(job, "ANTHROPIC_API_KEY");
    const headers = { "x-api-key": credential, "anthropic-version": "2023-06-01" };
    const body = (maxTokens: number) => ({
      model: "claude-sonnet-4-6",
      max_tokens: maxTokens,
      messages: [{ role: "user", content: "Summarise the README." }],
    });
    const url = `http://127.0.0.1:${gateway.port}`;
    // claude-sonnet-4-6: $3 input, $15 output per million. Worst case of the first: 1024 output
    // tokens ($0.0154) fits $0.05; it costs $0.018 (1000 in, 1000 out).
    model.script([{ text: "the first", usage: { input: 1_000, output: 1_000 } }]);
    const calls = () => model.journal().filter((e) => e.path === "/v1/messages").length;
    const before = calls();
    expect((await send(url, "POST", "/v1/messages", headers, body(1024))).status).toBe(200);
    // The second may cost up to $0.06 (4000 output tokens): $0.018 + $0.06 > $0.05.
    const refused = await send(url, "POST", "/v1/messages", headers, body(4000));
    expect(refused.status).toBe(403);
    expect(refused.json()).toMatchObject({ type: "error", error: { type: "permission_error" } });
    expect((refused.json() as { error: { message: string } }).error.message).toMatch(
      new RegExp(
        `^gateway: budget of Station ${ns}/tight reached: \\$0\\.018 spent or reserved of \\$0\\.05 in the last 1h, and this request may cost up to \\$0\\.06\\d* \\(about \\d+ input tokens and output limit 4000, at claude-sonnet-4-6's price\\); refused$`,
      ),
    );
    expect(calls()).toBe(before + 1);
    // The record holds the metered cost and no reservation left.
    const uid = running.metadata.uid ?? "";
    const [record] = (
      await admin.list<ModelUsage>(MODEL_USAGES, ns, { labelSelector: `${LABEL_AGENT_UID}=${uid}` })
    ).items;
    expect(record?.spec).toMatchObject({ station: "tight", meteredUSD: "0.018", reservedUSD: "0", calls: 1 });
    const done = await waitForPhase(admin, ns, "tight-run", ["Succeeded", "Failed"], 90_000);
    expect(done.status).toMatchObject({ costSource: "metered", costUSD: "0.018" });
  });
});
