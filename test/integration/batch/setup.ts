/**
 * Shared setup for the batch integration tests: an in-process controller (AgentController, the
 * leader's reconcile loop) on the real local API server, the fake provider servers, the real
 * SinkDispatcher, and a loopback http listener that records what the sinks receive.
 *
 * The controller's clock is the wall clock plus an offset the tests move (`skip`), so timeouts
 * (minutes), cleanup retries (15 s) and the 48 h stuck rule are reached without waiting. The
 * fakes keep their own virtual clock; tests end batches with `setOutcome` + `finish`.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import { providerFor } from "../../../src/batch/index.js";
import type { BatchProvider, BatchProviderName } from "../../../src/batch/provider.js";
import { parseConfig } from "../../../src/controller/config.js";
import { AgentController } from "../../../src/controller/controller.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import type { Agent } from "../../../src/core/types.js";
import { KubeClient } from "../../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, SECRETS, STATIONS } from "../../../src/kube/resources.js";
import { agentSecretsReader, SinkDispatcher } from "../../../src/sinks/index.js";
import { createTestNamespace, kubeConfig } from "../../harness/context.js";
import { eventually, eventuallyPasses } from "../../harness/eventually.js";

export const SINK_HEADERS_KEY = "sink-headers";
export const SINK_TOKEN = "Bearer batch-sink-token";

/** One envelope as the sink listener received it. */
export interface Received {
  headers: IncomingHttpHeaders;
  envelope: { source: Record<string, string>; event: Record<string, unknown> };
}

export interface SinkListener {
  url: string;
  received: Received[];
  /** The events delivered for one Agent, in arrival order. */
  eventsFor(agent: string): Record<string, unknown>[];
  close(): Promise<void>;
}

/** An http sink on `host` (a run pod on the real node reaches this machine at podReachableHost()). */
export async function startSinkListener(host = "127.0.0.1"): Promise<SinkListener> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        received.push({ headers: req.headers, envelope: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
        res.writeHead(200).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/events`,
    received,
    eventsFor: (agent) =>
      received.filter((r) => r.envelope.source.agent === agent).map((r) => r.envelope.event),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface BatchEnv {
  ns: string;
  client: KubeClient;
  controller: AgentController;
  metrics: ControllerMetrics;
  sinks: SinkDispatcher;
  listener: SinkListener;
  /** Moves the controller's clock forward. */
  skip(ms: number): void;
  /** Replaces the running controller with a fresh one (fresh memory), e.g. with other settings. */
  restart(env?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

export interface BatchEnvOptions {
  /** Base URL of each fake in use; other vendors point at a closed loopback port. */
  baseUrls: Partial<Record<BatchProviderName, string>>;
  /** agent-secrets data (plain text; encoded here). */
  secrets: Record<string, string>;
  /** Controller environment on top of NAMESPACE, POD_NAME, BATCH_ENABLED=true, BATCH_POLL_SECONDS=0. */
  env?: Record<string, string>;
}

export async function startBatchEnv(prefix: string, o: BatchEnvOptions): Promise<BatchEnv> {
  const client = await KubeClient.fromKubeConfig(kubeConfig());
  const ns = await createTestNamespace(prefix);
  const listener = await startSinkListener();
  const data: Record<string, string> = { [SINK_HEADERS_KEY]: `Authorization: ${SINK_TOKEN}\n` };
  for (const [k, v] of Object.entries(o.secrets)) data[k] = v;
  await client.create(SECRETS, ns, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "agent-secrets" },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  });
  let offset = 0;
  const now = () => Date.now() + offset;
  const metrics = new ControllerMetrics();
  const sinks = new SinkDispatcher({
    readSecretKey: agentSecretsReader((n, name) => client.get(SECRETS, n, name)),
    retry: { attempts: 3, baseMs: 50, maxMs: 200 },
    log: { warn: () => {}, error: () => {}, info: () => {} },
  });
  const provider = (name: BatchProviderName): BatchProvider =>
    providerFor(name, { baseUrl: o.baseUrls[name] ?? "http://127.0.0.1:9", timeoutMs: 5000 });
  const make = (env: Record<string, string>) =>
    new AgentController({
      config: parseConfig(
        {
          NAMESPACE: ns,
          POD_NAME: `${prefix}-controller`,
          BATCH_ENABLED: "true",
          BATCH_POLL_SECONDS: "0",
          ...o.env,
          ...env,
        },
        {},
        {
          // The safety-net poll drives batch polls and cleanup retries: short, so tests are fast.
          pollIntervalMs: 500,
          watchTimeoutSeconds: 30,
          backoffBaseMs: 100,
          backoffMaxMs: 1000,
          listPageSize: 100,
        },
      ),
      client,
      metrics,
      now,
      provider,
      sinks,
      log: process.env.BATCH_TEST_LOG ? (m) => console.log(`[${prefix}] ${m}`) : () => {},
    });
  const env: BatchEnv = {
    ns,
    client,
    controller: make({}),
    metrics,
    sinks,
    listener,
    skip: (ms) => {
      offset += ms;
    },
    restart: async (e = {}) => {
      await env.controller.stop();
      env.controller = make(e);
      await env.controller.start();
    },
    close: async () => {
      await env.controller.stop();
      await sinks.drain(5000);
      await listener.close();
      await client.close();
    },
  };
  await env.controller.start();
  return env;
}

// ---------------------------------------------------------------------------------------------
// Objects.

export interface DefinitionOpts {
  model: string;
  /** resources.secrets entry name (ANTHROPIC_API_KEY, …) and the agent-secrets key it names. */
  keyName: string;
  keyRef: string;
  batch?: { timeoutMinutes?: number; onTimeout?: "fail" | "fallback"; maxTokens?: number };
  extra?: Record<string, unknown>;
  sinks?: boolean;
  /** output.schema (structured output). */
  schema?: Record<string, unknown>;
}

export async function createBatchDefinition(env: BatchEnv, name: string, o: DefinitionOpts) {
  await env.client.create(AGENT_DEFINITIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name },
    spec: {
      description: "batch integration test",
      model: o.model,
      execution: "batch",
      prompt: "Summarise this ticket: {ticket}",
      ...(o.batch ? { batch: o.batch } : {}),
      resources: { secrets: [{ name: o.keyName, ref: o.keyRef }] },
      output: {
        ...(o.schema ? { schema: o.schema } : {}),
        ...(o.sinks === false
          ? {}
          : {
              select: [{ event: "message" }, { event: "result" }],
              sinks: [{ type: "http", url: env.listener.url, headers_secret: SINK_HEADERS_KEY }],
            }),
      },
      ...o.extra,
    },
  });
}

export async function createStation(
  env: BatchEnv,
  name: string,
  def: string,
  spec: Record<string, unknown> = {},
  annotations: Record<string, string> = {},
) {
  await env.client.create(STATIONS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name },
    spec: {
      agentDefRef: def,
      maxConcurrentRuns: 20,
      ...spec,
      template: {
        metadata: { annotations },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });
}

export async function createAgent(
  env: BatchEnv,
  name: string,
  station: string,
  spec: Record<string, unknown> = {},
) {
  await env.client.create(AGENTS, env.ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name },
    spec: { stationRef: station, parameters: { ticket: `ticket of ${name}` }, ...spec },
  });
}

export function getAgent(env: BatchEnv, name: string): Promise<Agent | undefined> {
  return env.client.get<Agent>(AGENTS, env.ns, name);
}

export function waitAgent(
  env: BatchEnv,
  name: string,
  what: string,
  check: (a: Agent) => boolean,
  timeoutMs = 60_000,
): Promise<Agent> {
  return eventually(
    `Agent ${name}: ${what}`,
    async () => {
      const a = await getAgent(env, name);
      return a && check(a) ? a : undefined;
    },
    timeoutMs,
  );
}

/** Running with a batchId: the submit went through and its patch is visible. */
export function waitRunningBatch(env: BatchEnv, name: string): Promise<Agent> {
  return waitAgent(
    env,
    name,
    "Running with a batchId",
    (a) => a.status?.phase === "Running" && !!a.status?.batchId,
  );
}

export function waitTerminal(env: BatchEnv, name: string): Promise<Agent> {
  return waitAgent(
    env,
    name,
    "terminal",
    (a) => a.status?.phase === "Succeeded" || a.status?.phase === "Failed",
  );
}

export function waitGone(env: BatchEnv, name: string): Promise<true> {
  return eventually(`Agent ${name} gone`, async () => (await getAgent(env, name)) === undefined, 60_000);
}

/** Waits until the sink listener holds an event for `agent` matching `match`; returns all its events. */
export function waitEvent(
  env: BatchEnv,
  agent: string,
  match: (e: Record<string, unknown>) => boolean,
  what: string,
): Promise<Record<string, unknown>[]> {
  return eventually(`sink event ${what} for ${agent}`, () => {
    const events = env.listener.eventsFor(agent);
    return events.some(match) ? events : undefined;
  });
}

export const isLifecycle =
  (status: string, reason?: string) =>
  (e: Record<string, unknown>): boolean =>
    e.kind === "lifecycle" &&
    e.phase === "agent" &&
    e.status === status &&
    (reason === undefined || e.reason === reason);

/** The value of one series of the controller's /metrics (0 when absent). */
export async function metricValue(
  metrics: ControllerMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const all = await metrics.registry.getMetricsAsJSON();
  const m = all.find((x) => x.name === name);
  const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => String(x.labels[k]) === val));
  return v?.value ?? 0;
}

export const hasFinalizer = (a: Agent) =>
  (a.metadata.finalizers ?? []).includes("agents.re-cinq.com/batch-cleanup");

export const outputLines = (a: Agent) => (a.status?.output ?? "").split("\n").filter((l) => l !== "");

/**
 * Ends the batch, then makes the next six polls fail (two 500s, two 429s with retry-after, two
 * malformed 200 bodies). While two faults are still queued the Agent must still be Running with
 * no output; once they are used up the next poll completes the run.
 */
export async function expectPollFaultsThenSuccess(
  env: BatchEnv,
  name: string,
  batchId: string,
  finish: () => void,
  fake: {
    inject(
      rule:
        | { kind: "status"; status: number; retryAfter?: number; times: number }
        | { kind: "malformed"; times: number },
    ): void;
    pollsSeen(): number;
  },
): Promise<Agent> {
  const start = fake.pollsSeen();
  fake.inject({ kind: "status", status: 500, times: 2 });
  fake.inject({ kind: "status", status: 429, retryAfter: 1, times: 2 });
  fake.inject({ kind: "malformed", times: 2 });
  finish();
  await eventually(`four faulted polls of ${name}`, () => fake.pollsSeen() - start >= 4 || undefined);
  const mid = await getAgent(env, name);
  expect(mid?.status).toMatchObject({ phase: "Running", batchId });
  expect(mid?.status?.output ?? "").toBe("");
  const done = await waitTerminal(env, name);
  expect(fake.pollsSeen() - start).toBeGreaterThanOrEqual(7);
  return done;
}

/** Waits until a /metrics series reaches `expected` (metrics are recorded after the patch they count). */
export async function expectMetric(
  metrics: ControllerMetrics,
  name: string,
  labels: Record<string, string>,
  expected: number,
): Promise<void> {
  const series = `${name}${JSON.stringify(labels)}`;
  await eventuallyPasses(
    `${series} = ${expected}`,
    async () => {
      expect(await metricValue(metrics, name, labels), series).toBe(expected);
    },
    20_000,
  );
}
