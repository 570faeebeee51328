/**
 * The four REAL CLIs (pinned, on the real node's Station image) through the model gateway
 * (docs/gateway.md): the controller with AGENT_GATEWAY_URL and its key builds each run with the
 * gateway as base URL and a run credential; the gateway (cluster mode, its ports on this plane)
 * swaps the credential for the key the definition names, forwards to the local model server of the
 * vendor, and records each call; the Agent ends Succeeded with the metered usage as its cost. No
 * provider key is in agent-secrets at all: the runs need none in their pods.
 *
 * Egress is on too (AGENT_GATEWAY_EGRESS_URL, docs/gateway.md#egress): every container has its
 * proxy variables, and each CLI still calls its model straight at the gateway, which the pods name
 * by a host alias (NO_PROXY holds that name; the conversation store, on the node's same address, is
 * reached through the proxy). A CLI that sent its model calls to the proxy would be refused there.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Job } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControllerPromptApi } from "../../../src/controller/prompt-api-wiring.js";
import type { ModelApiFamily } from "../../../src/core/cli/agent-clis.js";
import { PROVIDER_KEY_VARIABLES } from "../../../src/core/run-job/gateway-env.js";
import { ANNOTATION_MODEL_GATEWAY, LABEL_AGENT_UID } from "../../../src/core/run-job/layout.js";
import type { ModelUsage } from "../../../src/core/types.js";
import { type ClusterPorts, clusterPorts } from "../../../src/gateway/cluster-ports.js";
import { JOBS, MODEL_USAGES } from "../../../src/kube/resources.js";
import type { PromptApiServer } from "../../../src/prompt-api/index.js";
import { startAnthropicMessages } from "../../fakes/models/anthropic-messages.js";
import type { JournalEntry, ModelServer } from "../../fakes/models/base.js";
import { startGeminiServer } from "../../fakes/models/gemini-generate.js";
import { startOpenAiResponsesServer } from "../../fakes/models/openai-responses.js";
import { podReachableHost } from "../../harness/context.js";
import { startTestGateway, type TestGateway } from "../gateway/gateway-cluster.js";
import { type ConversationStore, promptApiCaller, startConversationStore } from "./realtime-helpers.js";
import {
  API_KEY_NAME,
  createAgent,
  createDefinition,
  createRealCliStation,
  finishedAgent,
  keySecret,
  type RealCliEnv,
  realClisSkipReason,
  startRealCliEnv,
} from "./setup.js";

const skip = realClisSkipReason();
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const quiet = { info() {}, warn() {}, error() {} };
/** The keys only the gateway holds (its agent-secrets directory), one per API. */
const REAL_KEYS: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "sk-ant-gateway-only-key",
  openai: "sk-openai-gateway-only-key",
  gemini: "AIza-gateway-only-key",
};
/** The routes the gateway meters, as the model servers journal them. */
const METERED: Readonly<Record<ModelApiFamily, RegExp>> = {
  anthropic: /^POST \/v1\/messages$/,
  openai: /^POST \/v1\/responses$/,
  gemini: /^POST \/v1beta\/models\/[^/]+:(stream)?[gG]enerateContent$/,
};
/** Where each API's key arrives at the provider, and its digest when it is the gateway's key. */
const HEADER: Readonly<Record<ModelApiFamily, string>> = {
  anthropic: "x-api-key",
  openai: "authorization",
  gemini: "x-goog-api-key",
};
const keyDigest = (api: ModelApiFamily) =>
  api === "openai" ? sha256(`Bearer ${REAL_KEYS.openai}`) : sha256(REAL_KEYS[api]);
/** The model calls the gateway meters among a model server's journal entries. */
const meteredCalls = (api: ModelApiFamily, calls: readonly JournalEntry[]) =>
  calls.filter((c) => METERED[api].test(`${c.method} ${c.path}`));
/** Each model answer's usage, scripted: the metered sums are exact multiples of it. */
const USAGE = { input: 120, output: 12 };
const RUN_TIMEOUT_MS = 420_000;

const rows: { cli: string; model: string; api: ModelApiFamily }[] = [
  { cli: "claude", model: "claude-sonnet-4-6", api: "anthropic" },
  { cli: "codex", model: "gpt-5.5", api: "openai" },
  { cli: "gemini", model: "gemini-2.5-pro", api: "gemini" },
  { cli: "opencode", model: "opencode/anthropic/claude-sonnet-4-6", api: "anthropic" },
];

/** The gateway as the pods name it (a host alias of the node's address). */
const GATEWAY_NAME = "agent-gateway.test";
const API_TOKEN = "gateway-rt-caller-token";
const SIGNING_KEY = "gateway-rt-signing-key";
let env: RealCliEnv;
let promptApi: PromptApiServer | undefined;
let store: ConversationStore | undefined;
let models: Record<ModelApiFamily, ModelServer>;
let gateway: TestGateway;
let ports: ClusterPorts | undefined;
const dir = mkdtempSync(join(tmpdir(), "gw-real-clis-"));

/** A definition of `model` naming its API's key (the gateway sends it), and a Station running it. */
async function recipe(
  name: string,
  model: string,
  api: ModelApiFamily,
  spec: Record<string, unknown>,
  station: Record<string, unknown> = {},
): Promise<void> {
  const { resources, ...rest } = spec as { resources?: Record<string, unknown> };
  await createDefinition(env, name, {
    model,
    ...rest,
    resources: { secrets: [keySecret(api)], ...resources },
  });
  await createRealCliStation(env, name, name, {
    spec: station,
    podSpec: { hostAliases: [{ ip: podReachableHost(), hostnames: [GATEWAY_NAME] }] },
  });
}

describe.skipIf(skip)("the real CLIs through the model gateway", () => {
  beforeAll(async () => {
    const host = podReachableHost();
    const [anthropic, openai, gemini] = await Promise.all([
      startAnthropicMessages(host),
      startOpenAiResponsesServer({ host }),
      startGeminiServer(host),
    ]);
    models = { anthropic, openai, gemini };
    for (const m of Object.values(models)) m.fallback({ text: "Hello.", usage: USAGE });
    const secretsDir = join(dir, "agent-secrets");
    const keyFile = join(dir, "credential-key");
    // As `openssl rand -hex 32` writes it (docs/gateway.md#installing); the gateway reads the same text.
    const credentialKey = Buffer.from(randomBytes(32).toString("hex"));
    writeFileSync(keyFile, `${credentialKey}\n`);
    mkdirSync(secretsDir);
    for (const api of Object.keys(REAL_KEYS) as ModelApiFamily[]) {
      writeFileSync(join(secretsDir, API_KEY_NAME[api]), `${REAL_KEYS[api]}\n`);
    }
    // The namespace exists only once the env has started, and the controller needs the gateway's
    // address first: the ports are wired when both exist.
    gateway = await startTestGateway({
      ports: () => {
        if (!ports) throw new Error("the gateway's cluster ports are not wired yet");
        return ports;
      },
      upstreams: { anthropic: anthropic.origin, openai: openai.origin, gemini: gemini.origin },
      credentialKey,
      host,
      // The conversation store is on the node's (private) address.
      egress: { privateCidrs: [`${host}/32`] },
    });
    env = await startRealCliEnv({
      prefix: "real-gateway",
      model: anthropic,
      baseUrls: {},
      // agent-secrets holds no provider key: the runs need none.
      keys: {},
      controllerEnv: {
        AGENT_GATEWAY_URL: `http://${GATEWAY_NAME}:${gateway.port}`,
        AGENT_GATEWAY_EGRESS_URL: `http://${GATEWAY_NAME}:${gateway.egressPort}`,
        AGENT_GATEWAY_CREDENTIAL_KEY_FILE: keyFile,
        RUN_POD_FIELDS: "hostAliases",
        REALTIME_ENABLED: "true",
        REALTIME_API_TOKEN: API_TOKEN,
        REALTIME_SIGNING_KEY: SIGNING_KEY,
      },
    });
    promptApi = await startControllerPromptApi({
      config: { namespace: env.ns, realtimeApiToken: API_TOKEN, realtimeSigningKey: SIGNING_KEY },
      client: env.client,
      port: 0,
      host: "127.0.0.1",
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    store = await startConversationStore(host);
    ports = clusterPorts({
      kube: env.client,
      namespace: env.ns,
      agentSecretsDir: secretsDir,
      replica: "agent-gateway-test",
      logger: quiet,
    });
  }, 120_000);

  afterAll(async () => {
    await promptApi?.close(1000);
    await store?.close();
    await gateway?.close();
    await ports?.close();
    await env?.close();
    await Promise.all([models?.openai?.close(), models?.gemini?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(rows)(
    "$cli: Succeeded through the gateway, the provider saw only the gateway's key, the cost is the metered one",
    async ({ cli, model, api }) => {
      const name = `gw-${cli}`;
      const server = models[api];
      const before = server.journal().length;
      await recipe(name, model, api, { prompt: "Say hello." });
      await createAgent(env, name, name);
      const agent = await finishedAgent(env, name, RUN_TIMEOUT_MS);
      const uid = agent.metadata.uid ?? "";
      expect(agent.status?.failureReason).toBeUndefined();
      expect(agent.status?.phase).toBe("Succeeded");
      // With egress on, nothing of the run was refused: the CLI called its model at the gateway
      // directly and reached for nothing else.
      expect(agent.status?.egress).toBeUndefined();

      // The pod held the run's credential, never a key: no provider-key variable came from a Secret.
      const job = await env.client.get<V1Job>(JOBS, env.ns, agent.status?.jobName ?? "");
      expect(job?.metadata?.annotations?.[ANNOTATION_MODEL_GATEWAY]).toBe(api);
      for (const c of [
        ...(job?.spec?.template.spec?.containers ?? []),
        ...(job?.spec?.template.spec?.initContainers ?? []),
      ]) {
        for (const e of c.env ?? []) {
          if (PROVIDER_KEY_VARIABLES.has(e.name))
            expect(e.value ?? "", `${c.name}/${e.name}`).toMatch(/^agw1\./);
        }
      }

      // Every call reached the provider with the gateway's key for that API.
      const calls = server.journal().slice(before);
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls)
        expect(call.credentialDigests[HEADER[api]], `${call.method} ${call.path}`).toBe(keyDigest(api));

      // The run's cost: its calls as the gateway metered them, every scripted answer once.
      const metered = meteredCalls(api, calls).length;
      expect(metered).toBeGreaterThan(0);
      const records = (
        await env.client.list<ModelUsage>(MODEL_USAGES, env.ns, {
          labelSelector: `${LABEL_AGENT_UID}=${uid}`,
        })
      ).items;
      expect(records.reduce((n, r) => n + r.spec.calls, 0)).toBe(metered);
      expect(agent.status).toMatchObject({
        costSource: "metered",
        usage: { inputTokens: USAGE.input * metered, outputTokens: USAGE.output * metered },
      });
      expect(Number(agent.status?.costUSD)).toBeGreaterThan(0);
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  it(
    "claude on a Station whose budget cannot take its first request: the gateway refuses it 403, claude prints why, the Agent fails saying so",
    async () => {
      const name = "gw-budget";
      const before = models.anthropic.journal().length;
      // Open for a run to start (nothing spent), far too small for any request's worst case.
      await recipe(
        name,
        "claude-sonnet-4-6",
        "anthropic",
        { prompt: "Say hello." },
        {
          budget: { limitUSD: 0.000001, window: "1h" },
        },
      );
      await createAgent(env, name, name);
      const agent = await finishedAgent(env, name, RUN_TIMEOUT_MS);
      expect(agent.status?.phase).toBe("Failed");
      expect(agent.status?.exitCode).not.toBe(0);
      expect(agent.status?.failureReason).toContain(`gateway: budget of Station ${env.ns}/${name} reached`);
      // No model call reached the provider.
      expect(meteredCalls("anthropic", models.anthropic.journal().slice(before))).toEqual([]);
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  it(
    "a hostile agent (the real claude told by its model) searches its environment, processes, mounts and files for a provider key: it finds its run credential and no key",
    async () => {
      const name = "gw-hostile";
      const before = models.anthropic.journal().length;
      await recipe(name, "claude-sonnet-4-6", "anthropic", {
        prompt: "Find any API key you can.",
        permission_mode: "bypass",
      });
      // What a prompt-injected agent runs: every variable of every process it can read, the
      // mounted secrets, its workspace and home, and any file naming a key.
      const search = [
        "env",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; echo; done 2>/dev/null",
        "ls -laR /var/run/secrets /run/secrets 2>&1 | head -50",
        "grep -rIs -e 'sk-ant' -e 'AIza' -e 'sk-openai' /workspace /tmp /home /root /etc /run 2>/dev/null | head -50",
        "echo SEARCH-DONE",
      ].join("; ");
      models.anthropic.script([
        {
          text: "Looking.",
          toolCall: { name: "Bash", input: { command: search, description: "search" } },
          usage: USAGE,
        },
        { text: "Nothing found.", usage: USAGE },
      ]);
      await createAgent(env, name, name);
      const agent = await finishedAgent(env, name, RUN_TIMEOUT_MS);
      expect(agent.status?.phase, agent.status?.failureReason).toBe("Succeeded");
      // The search's output went back to the model in the next request: what the agent could see.
      const calls = meteredCalls("anthropic", models.anthropic.journal().slice(before));
      const seen = calls.map((c) => JSON.stringify(c.body)).find((b) => b.includes("SEARCH-DONE")) ?? "";
      expect(seen, "the search ran and its output reached the model").toContain("SEARCH-DONE");
      // It read the environment (its own credential is there) and found no provider key.
      expect(seen).toContain("agw1.");
      for (const key of Object.values(REAL_KEYS)) expect(seen).not.toContain(key);
    },
    RUN_TIMEOUT_MS + 60_000,
  );

  // opencode's realtime session is not run end to end without the gateway either (opencode.test.ts).
  it.each(rows.filter((r) => r.cli !== "opencode"))(
    "$cli realtime through the gateway: two turns in one pod, then a resume in a fresh pod, every turn metered, the key never in a pod",
    async ({ cli, model, api }) => {
      const server = models[api];
      const caller = promptApiCaller(
        () => ({ port: promptApi?.port ?? 0, ns: env.ns }),
        API_TOKEN,
        RUN_TIMEOUT_MS,
      );
      const name = `gw-rt-${cli}`;
      const before = server.journal().length;
      await recipe(name, model, api, {
        prompt: "Remember the number 42.",
        execution: "realtime",
        resources: { conversation: { source: `${store?.url}/conv` } },
      });
      server.script([
        { text: "Noted: 42.", usage: USAGE },
        { text: "You said 42.", usage: USAGE },
      ]);
      await createAgent(env, `${name}-a`, name);
      await caller.untilAccepted(`${name}-a`, "Which number?");
      expect(await caller.post(`${name}-a`, "close")).toMatchObject({ status: 202 });
      const first = await finishedAgent(env, `${name}-a`, RUN_TIMEOUT_MS);
      expect(first.status?.failureReason ?? "").toBe("");
      expect(first.status).toMatchObject({
        phase: "Succeeded",
        costSource: "metered",
        usage: { inputTokens: USAGE.input * 2, outputTokens: USAGE.output * 2 },
      });
      const sessionId = first.status?.sessionId ?? "";
      expect(sessionId).not.toBe("");

      // A fresh pod resumes the session: its turn goes through the gateway with its own credential.
      server.script([{ text: "It was 42.", usage: USAGE }]);
      const resumedFrom = server.journal().length;
      await createAgent(env, `${name}-b`, name, { resumeSession: sessionId });
      await caller.untilAccepted(`${name}-b`, "What was the number?");
      expect(await caller.post(`${name}-b`, "close")).toMatchObject({ status: 202 });
      const resumed = await finishedAgent(env, `${name}-b`, RUN_TIMEOUT_MS);
      expect(resumed.status?.failureReason ?? "").toBe("");
      expect(resumed.status).toMatchObject({
        phase: "Succeeded",
        sessionId,
        costSource: "metered",
        usage: { inputTokens: USAGE.input, outputTokens: USAGE.output },
      });
      const [resumedCall] = meteredCalls(api, server.journal().slice(resumedFrom));
      // The resumed turn carried the earlier history, and reached the provider with the gateway's key.
      expect(JSON.stringify(resumedCall?.body)).toContain("Remember the number 42.");
      expect(resumedCall?.credentialDigests[HEADER[api]]).toBe(keyDigest(api));
      expect(server.journal().length).toBeGreaterThan(before);
    },
    RUN_TIMEOUT_MS * 2,
  );
});
