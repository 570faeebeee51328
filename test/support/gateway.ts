/**
 * The model gateway on 127.0.0.1 in front of the local model servers of test/fakes/models (one per
 * vendor), with in-memory ports: run states a test sets, the usage records it reads, real keys it
 * knows. A small HTTP client that keeps every chunk of an answer as it arrives.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { issueRunCredential, type RunClaims } from "../../src/core/run-job/gateway-credential.js";
import { GatewayMetrics } from "../../src/gateway/metrics.js";
import { type RunState, RunUnconfirmedError, type UsageRecord } from "../../src/gateway/ports.js";
import { type GatewayServers, startGatewayServers } from "../../src/gateway/server.js";
import { upstreamPools } from "../../src/gateway/upstreams.js";
import type { GatewayVendor } from "../../src/gateway/vendors.js";
import { type AnthropicMessagesServer, startAnthropicMessages } from "../fakes/models/anthropic-messages.js";
import { type GeminiServer, startGeminiServer } from "../fakes/models/gemini-generate.js";
import { type OpenAiResponsesServer, startOpenAiResponsesServer } from "../fakes/models/openai-responses.js";

export const GATEWAY_TEST_KEY = Buffer.from("gateway-test-key-of-thirty-two-bytes!");
export const REAL_KEYS: Readonly<Record<GatewayVendor, string>> = {
  anthropic: "sk-ant-real-provider-key",
  openai: "sk-openai-real-provider-key",
  gemini: "AIza-real-provider-key",
};

/** The Station every test run belongs to, as the metrics label it. */
export const TEST_STATION = "docs-station";

export const TEST_RUN: Omit<RunClaims, "vendor"> = {
  namespace: "ai-agents",
  name: "fix-readme",
  uid: "6f1c2e0a-1111-4c2b-9d3e-0123456789ab",
};

export interface GatewayUnderTest {
  url: string;
  port: number;
  metricsUrl: string;
  anthropic: AnthropicMessagesServer;
  openai: OpenAiResponsesServer;
  gemini: GeminiServer;
  metrics: GatewayMetrics;
  /** A run credential for TEST_RUN (or the run given), allowing `vendor`. */
  credential(vendor: GatewayVendor, run?: Partial<Omit<RunClaims, "vendor">>): string;
  /** The state the run lookup answers, by uid (active when unset); a message: it cannot confirm the run. */
  runStates: Map<string, RunState | { unconfirmed: string }>;
  /** Vendors the key source has no key for. */
  missingKeys: Set<GatewayVendor>;
  /** Vendors whose key the key source cannot read now (it throws this message). */
  unreadableKeys: Map<GatewayVendor, string>;
  usage: UsageRecord[];
  /** The Warning Events the gateway asked for, as (uid, reason, note). */
  warnings: { uid: string; reason: string; note: string }[];
  /** When set, the budget gate refuses every metered request with this message. */
  budgetRefusal: { message?: string };
  /** The worst cases the budget gate was asked to admit. */
  budgetAsked: { station: string; usd: number; why: string }[];
  /** Metered calls started (UsageStore.started) so far. */
  startedCalls(): number;
  /** From now on a record is not durable (its promise pending) until `releaseRecords`. */
  holdRecords(): void;
  releaseRecords(): void;
  /** Resolves with the `n`-th usage record (1-based) once it is recorded. */
  usageRecord(n: number): Promise<UsageRecord>;
  close(): Promise<void>;
}

export async function startGatewayUnderTest(
  options: { maxRequestBytes?: number } = {},
): Promise<GatewayUnderTest> {
  const [anthropic, openai, gemini] = await Promise.all([
    startAnthropicMessages(),
    startOpenAiResponsesServer(),
    startGeminiServer(),
  ]);
  const pools = upstreamPools({
    upstreams: { anthropic: anthropic.origin, openai: openai.origin, gemini: gemini.origin },
    idleTimeoutMs: 600_000,
  });
  const runStates = new Map<string, RunState | { unconfirmed: string }>();
  const missingKeys = new Set<GatewayVendor>();
  const unreadableKeys = new Map<GatewayVendor, string>();
  const usage: UsageRecord[] = [];
  const warnings: { uid: string; reason: string; note: string }[] = [];
  const waiters: Array<{ n: number; resolve: (r: UsageRecord) => void }> = [];
  let started = 0;
  const budgetRefusal: { message?: string } = {};
  const budgetAsked: { station: string; usd: number; why: string }[] = [];
  let gate: { held: Promise<void>; release: () => void } | undefined;
  const metrics = new GatewayMetrics();
  const quiet = { info() {}, warn() {}, error() {} };
  const servers: GatewayServers = await startGatewayServers(
    {
      upstreams: pools,
      credentialKey: GATEWAY_TEST_KEY,
      keys: {
        keyFor: async (_run, vendor) => {
          const unreadable = unreadableKeys.get(vendor);
          if (unreadable !== undefined) throw new Error(unreadable);
          return missingKeys.has(vendor) ? { missing: "the test gives it none" } : { key: REAL_KEYS[vendor] };
        },
      },
      runs: {
        runState: async (run) => {
          const state = runStates.get(run.uid) ?? { state: "active" };
          if ("unconfirmed" in state) throw new RunUnconfirmedError(state.unconfirmed);
          return state;
        },
        stationOf: async () => TEST_STATION,
      },
      budget: {
        admit: async (_run, _vendor, station, worst) => {
          budgetAsked.push({ station, ...worst });
          return budgetRefusal.message !== undefined
            ? { ok: false, message: budgetRefusal.message }
            : { ok: true, reservedUsd: worst.usd };
        },
      },
      usage: {
        started() {
          started++;
        },
        async record(entry) {
          usage.push(entry);
          for (const w of waiters.filter((w) => w.n <= usage.length)) {
            w.resolve(usage[w.n - 1] as UsageRecord);
            waiters.splice(waiters.indexOf(w), 1);
          }
          if (gate) await gate.held;
        },
      },
      warnings: {
        warn: async (run, reason, _action, note) => {
          warnings.push({ uid: run.uid, reason, note });
        },
      },
      metrics,
      logger: quiet,
      maxRequestBytes: options.maxRequestBytes ?? 1024 * 1024,
      idleTimeoutMs: 600_000,
    },
    { host: "127.0.0.1", port: 0, metricsPort: 0 },
  );
  return {
    url: `http://127.0.0.1:${servers.port}`,
    port: servers.port,
    metricsUrl: `http://127.0.0.1:${servers.metricsPort}/metrics`,
    anthropic,
    openai,
    gemini,
    warnings,
    metrics,
    credential: (vendor, run = {}) => issueRunCredential(GATEWAY_TEST_KEY, { ...TEST_RUN, ...run, vendor }),
    runStates,
    missingKeys,
    unreadableKeys,
    usage,
    startedCalls: () => started,
    budgetRefusal,
    budgetAsked,
    holdRecords() {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      gate = { held, release };
    },
    releaseRecords() {
      gate?.release();
      gate = undefined;
    },
    usageRecord: (n) =>
      usage.length >= n
        ? Promise.resolve(usage[n - 1] as UsageRecord)
        : new Promise((resolve) => waiters.push({ n, resolve })),
    async close() {
      await servers.close(100);
      await Promise.all(Object.values(pools).map((p) => p.destroy()));
      await Promise.all([anthropic.close(), openai.close(), gemini.close()]);
    },
  };
}

export interface Answer {
  status: number;
  headers: IncomingMessage["headers"];
  /** The body chunks in the order they arrived. */
  chunks: Buffer[];
  body: Buffer;
  json(): unknown;
}

/** An answer opened but not read: the response to read chunk by chunk, or abort. */
export function openRequest(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<IncomingMessage> {
  const payload =
    body === undefined ? undefined : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      {
        method,
        agent: false,
        headers: {
          ...(payload
            ? { "content-type": "application/json", "content-length": String(payload.byteLength) }
            : {}),
          ...headers,
        },
      },
      resolve,
    );
    req.on("error", reject);
    req.end(payload);
  });
}

export function readAnswer(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("error", reject);
    res.on("end", () => {
      const body = Buffer.concat(chunks);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        chunks,
        body,
        json: () => JSON.parse(body.toString("utf8")),
      });
    });
  });
}

export async function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  return readAnswer(await openRequest(url, method, path, headers, body));
}
