/**
 * Shared setup of the typed-client and `kubectl agent` tests: a namespace on the local plane, the
 * controller in-process (realtime enabled, AGENT_IMAGE = the agent image built from the Dockerfile) and
 * its prompt API served over HTTP on 127.0.0.1 as the controller serves it on 8082, the
 * `agent-realtime` Secret the plugin reads the api-token from, and Station builders:
 *
 * - kwok Stations whose pods end as scripted (exit code, run time, the agent container's log),
 *   for interactive runs: fast, and the controller, Job, pod log and read-back are all real;
 * - real-node Stations, where the agent image's init and supervisor run a fake CLI from a Station
 *   image, for realtime sessions (skipped, with the reason, on a machine without the real node);
 * - a Station whose pods can never be scheduled, for a realtime run that stays "not serving".
 */
import { parseConfig } from "../../../src/controller/config.js";
import { AgentController } from "../../../src/controller/controller.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { startControllerPromptApi } from "../../../src/controller/prompt-api-wiring.js";
import { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, SECRETS, STATIONS } from "../../../src/kube/resources.js";
import type { PromptApiServer } from "../../../src/prompt-api/index.js";
import { agentSecretsReader, SinkDispatcher } from "../../../src/sinks/index.js";
import { createFakeCliGates, type FakeCliGates } from "../../fakes/cli/script.js";
import {
  agentImage,
  createFakeCliJournal,
  createTestNamespace,
  FAKE_CLI_STATION_IMAGE,
  type FakeCliJournal,
  type FakeCliScript,
  fakeCliEnv,
  kubeConfig,
  type PodScript,
  podReachableHost,
  podScriptAnnotations,
  realNodePodTemplate,
  realNodeProblem,
} from "../../harness/context.js";

export const API_TOKEN = "client-test-api-token";
const SIGNING_KEY = "client-test-signing-key";
export const GROUP_VERSION = "agents.re-cinq.com/v1beta1";

/**
 * Why run pods cannot run here ("" when they can): the realtime-session tests need the plane's real
 * node (the global setup prints the reason) and skip without it.
 */
export const RUN_POD_SKIP = realNodeProblem();

/** Claude's stream-json for one run with a tool call (docs/agent-clis.md#claude), as a pod logs it. */
export const CLAUDE_LINES = [
  '{"type":"system","subtype":"init","cwd":"/workspace","session_id":"4855a4a8-c43d-426f-99fc-150c8ea32853","tools":["Bash","Read","Edit"],"model":"claude-sonnet-4-6","permissionMode":"default"}',
  '{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"I will run the tests."}]},"parent_tool_use_id":null,"session_id":"4855a4a8"}',
  '{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"npm test","description":"Run tests"}}]},"session_id":"4855a4a8"}',
  '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"12 passed","is_error":false}]},"session_id":"4855a4a8"}',
  '{"type":"assistant","message":{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"text","text":"All tests pass."}]},"session_id":"4855a4a8"}',
  '{"type":"result","subtype":"success","is_error":false,"duration_ms":3000,"duration_api_ms":2000,"num_turns":1,"result":"All tests pass.","stop_reason":"end_turn","session_id":"4855a4a8-c43d-426f-99fc-150c8ea32853","total_cost_usd":0.0106,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":20012,"output_tokens":24}}',
];

/** What `kubectl agent logs` prints for CLAUDE_LINES. */
export const CLAUDE_RENDERED = [
  "[session] 4855a4a8-c43d-426f-99fc-150c8ea32853 · claude-sonnet-4-6",
  "I will run the tests.",
  "[tool] Bash · npm test",
  "[tool result] 12 passed",
  "All tests pass.",
  "[result] success · cost $0.0106 · 1 turn · 3.0 s",
];

export interface ClientEnv {
  ns: string;
  client: KubeClient;
  /** The controller's prompt API, e.g. http://127.0.0.1:40123. */
  apiUrl: string;
  journal: FakeCliJournal;
  gates: FakeCliGates;
  close(): Promise<void>;
}

export async function startClientEnv(prefix: string): Promise<ClientEnv> {
  const client = await KubeClient.fromKubeConfig(kubeConfig());
  const ns = await createTestNamespace(prefix);
  const journal = await createFakeCliJournal(RUN_POD_SKIP === "" ? podReachableHost() : undefined);
  const gates = await createFakeCliGates(RUN_POD_SKIP === "" ? podReachableHost() : undefined);
  const secret = (name: string, data: Record<string, string>) =>
    client.create(SECRETS, ns, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
    });
  // As deploy/components/realtime has it (the plugin reads api-token from here), with a trailing
  // newline as `kubectl create secret --from-file` would leave one.
  await secret("agent-realtime", { "api-token": `${API_TOKEN}\n`, "signing-key": SIGNING_KEY });
  await secret("agent-secrets", { "anthropic-key": "sk-test" });
  const config = parseConfig(
    {
      NAMESPACE: ns,
      POD_NAME: `${prefix}-controller`,
      // Without a real node no run pod runs, and the kwok-scripted pods need no real image.
      AGENT_IMAGE: RUN_POD_SKIP === "" ? agentImage() : "agent.invalid/no-real-node:0",
      REALTIME_ENABLED: "true",
      REALTIME_API_TOKEN: API_TOKEN,
      REALTIME_SIGNING_KEY: SIGNING_KEY,
    },
    {},
    {
      pollIntervalMs: 1000,
      watchTimeoutSeconds: 30,
      backoffBaseMs: 100,
      backoffMaxMs: 1000,
      listPageSize: 100,
    },
  );
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  const sinks = new SinkDispatcher({
    readSecretKey: agentSecretsReader((n, name) => client.get(SECRETS, n, name)),
    retry: { attempts: 1, baseMs: 50, maxMs: 50 },
    log: quiet,
  });
  const log = process.env.CLIENT_TEST_LOG ? (m: string) => console.log(`[${prefix}] ${m}`) : () => {};
  const controller = new AgentController({ config, client, metrics: new ControllerMetrics(), sinks, log });
  await controller.start();
  let api: PromptApiServer | undefined;
  try {
    api = await startControllerPromptApi({ config, client, port: 0, host: "127.0.0.1", logger: quiet });
  } catch (err) {
    await controller.stop();
    throw err;
  }
  const server = api;
  return {
    ns,
    client,
    apiUrl: `http://127.0.0.1:${server.port}`,
    journal,
    gates,
    close: async () => {
      await server.close(1000);
      await controller.stop();
      await sinks.drain(2000);
      await client.close();
      await journal.remove();
      await gates.remove();
    },
  };
}

export async function createDefinition(
  env: ClientEnv,
  name: string,
  spec: Record<string, unknown> = {},
): Promise<void> {
  await env.client.create(AGENT_DEFINITIONS, env.ns, {
    apiVersion: GROUP_VERSION,
    kind: "AgentDefinition",
    metadata: { name },
    spec: { prompt: "Work on {topic}.", model: "claude-sonnet-4-6", execution: "interactive", ...spec },
  });
}

async function createStation(
  env: ClientEnv,
  name: string,
  definition: string,
  template: Record<string, unknown>,
  spec: Record<string, unknown> = {},
): Promise<void> {
  await env.client.create(STATIONS, env.ns, {
    apiVersion: GROUP_VERSION,
    kind: "Station",
    metadata: { name },
    spec: { agentDefRef: definition, deadlineMinutes: 10, ...spec, template },
  });
}

/** A Station whose run pods (on kwok) end as `script` says; `spec` adds Station fields. */
export function createKwokStation(
  env: ClientEnv,
  name: string,
  definition: string,
  script: PodScript,
  spec: Record<string, unknown> = {},
): Promise<void> {
  return createStation(
    env,
    name,
    definition,
    {
      metadata: { annotations: podScriptAnnotations(script) },
      spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
    },
    spec,
  );
}

/** A Station whose run pods run on the real node, where the fake CLI follows `script`. */
export function createRealNodeStation(
  env: ClientEnv,
  name: string,
  definition: string,
  script: FakeCliScript,
): Promise<void> {
  return createStation(env, name, definition, {
    spec: {
      ...realNodePodTemplate(),
      containers: [
        {
          name: "agent",
          image: FAKE_CLI_STATION_IMAGE,
          env: fakeCliEnv({ ...script, gates: env.gates.target }, env.journal),
        },
      ],
    },
  });
}

/** A Station whose run pods no node accepts: they stay Pending, so a realtime run never serves. */
export function createUnschedulableStation(env: ClientEnv, name: string, definition: string): Promise<void> {
  return createStation(env, name, definition, {
    spec: {
      nodeSelector: { "client-test.example/no-such-node": "true" },
      containers: [{ name: "agent", image: "example.test/agent:1" }],
    },
  });
}
