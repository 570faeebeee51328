/**
 * `npm run bench -- --provider-limits [--agents N] [--rpm R] [--tpm T] [--requests K]
 * [--input-tokens I] [--output-tokens O] [--latency-ms L] [--deadline-minutes D] [--modes a,b]`:
 * a benchmark, not a test (docs/provider-limits.md). N Agents on one Station whose model provider
 * (bench/rate-limited-model.ts) enforces a requests-per-minute and a tokens-per-minute limit with
 * 429 + retry-after, through the compiled controller on a private local control plane, once per mode:
 *
 * - `declared`: the Station declares the provider's limits (spec.providerLimits: the RPM and TPM);
 *   the controller learns from the runs' throttling too;
 * - `learned`: no declaration; the controller learns from the runs' throttling alone (the Agents
 *   arrive at twice the rate the limit allows, so what is learned from early runs can hold later ones);
 * - `off`: no declaration and PROVIDER_LEARNING=false: every Agent starts at once, as before.
 *
 * The runs are kwok pods whose model traffic the benchmark makes for them while they are Running:
 * K requests one after the other, each 429 ridden out after its retry-after by continuing the same
 * session, until the pod is gone (its Job's deadline). This stands in for the run pod's supervisor
 * riding out a provider limit, which this benchmark does not run; so does the status.providerRetries
 * the benchmark writes on an Agent whose run was throttled once the Agent has ended, as the run
 * pod's report would.
 *
 * Reported per mode: completed runs per minute against what the limit allows, runs failed, tokens
 * spent beyond a fault-free run (the tokens the provider charged for runs that did not succeed),
 * 429s answered. Writes bench/results/<time>-provider-limits-n<N>.json.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import type { Agent } from "../src/core/types.js";
import type { KubeClient } from "../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, PODS, STATIONS } from "../src/kube/resources.js";
import {
  FINISH_AT_ANNOTATION,
  podScriptAnnotations,
  SCRIPTED_ANNOTATION,
} from "../test/harness/pod-script.js";
import {
  build,
  ControllerProcess,
  createNamespace,
  load,
  log,
  pool,
  RESULTS,
  startBenchPlane,
  waitUntil,
  watchLoop,
  writeResult,
} from "./lib.js";
import { RateLimitedModel, type RunRetries, type RunShape, simulateRun } from "./rate-limited-model.js";

type Mode = "declared" | "learned" | "off";

interface Options {
  agents: number;
  rpm: number;
  tpm: number;
  shape: RunShape;
  latencyMs: number;
  deadlineMinutes: number;
  modes: Mode[];
  build: boolean;
}

function parse(argv: string[]): Options {
  const int = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    if (i < 0) return fallback;
    const n = Number(argv[i + 1]);
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`${flag} must be a positive integer, got: "${argv[i + 1]}"`);
    return n;
  };
  const modesAt = argv.indexOf("--modes");
  const modes = (modesAt < 0 ? "declared,off" : (argv[modesAt + 1] ?? "")).split(",") as Mode[];
  for (const m of modes) {
    if (!["declared", "learned", "off"].includes(m)) {
      throw new Error(`--modes takes declared, learned and off separated by commas, got: "${m}"`);
    }
  }
  return {
    agents: int("--agents", 200),
    rpm: int("--rpm", 240),
    tpm: int("--tpm", 180_000),
    shape: {
      requests: int("--requests", 3),
      inputTokens: int("--input-tokens", 900),
      outputTokens: int("--output-tokens", 100),
    },
    latencyMs: int("--latency-ms", 1500),
    deadlineMinutes: int("--deadline-minutes", 2),
    modes,
    build: !argv.includes("--no-build"),
  };
}

/** The claude result line every run logs: its fault-free usage (a resumed turn spends no more). */
function resultLine(shape: RunShape): string {
  const input = shape.requests * shape.inputTokens;
  const output = shape.requests * shape.outputTokens;
  return JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: "done",
    session_id: "s-1",
    usage: {
      input_tokens: input,
      output_tokens: output,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  });
}

interface ModeResult {
  mode: Mode;
  succeeded: number;
  failed: number;
  minutes: number;
  runsPerMinute: number;
  allowedRunsPerMinute: number;
  ratio: number;
  tokensSpent: number;
  tokensFaultFree: number;
  tokensBeyondFaultFreePct: number;
  throttled: number;
  runsThrottled: number;
  maxRunning: number;
}

async function runMode(
  o: Options,
  mode: Mode,
  plane: { kubeconfig: string },
  client: KubeClient,
  server: string,
  at: string,
): Promise<ModeResult> {
  const ns = `bench-provider-${mode}`;
  const model = new RateLimitedModel({
    requestsPerMinute: o.rpm,
    tokensPerMinute: o.tpm,
    latencyMs: o.latencyMs,
  });
  await model.start();
  const perRunTokens = o.shape.requests * (o.shape.inputTokens + o.shape.outputTokens);
  const allowed = Math.min(o.rpm / o.shape.requests, o.tpm / perRunTokens);
  await createNamespace(client, ns);
  await client.create(AGENT_DEFINITIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def" },
    spec: {
      prompt: "Summarise {topic}.",
      model: "claude-sonnet-4-5",
      resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "bench-key" }] },
    },
  });
  await client.create(STATIONS, ns, {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "bench" },
    spec: {
      agentDefRef: "def",
      deadlineMinutes: o.deadlineMinutes,
      successfulRunsHistoryLimit: o.agents,
      failedRunsHistoryLimit: o.agents,
      ...(mode === "declared"
        ? { providerLimits: { requestsPerMinute: o.rpm, tokensPerMinute: o.tpm } }
        : {}),
      template: {
        // kwok keeps the pod Running until the benchmark, its run done, sets its finish time.
        metadata: {
          annotations: podScriptAnnotations({
            exitCode: 0,
            runTime: "10h",
            logs: { agent: resultLine(o.shape) },
          }),
        },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  });

  const abort = new AbortController();
  const retries = new Map<string, RunRetries>();
  const runs = new Map<string, AbortController>();
  const terminal = new Map<string, string>();
  const reported = new Set<string>();
  const phases = new Map<string, string>();
  let maxRunning = 0;

  const finishPod = async (pod: string) => {
    await client.jsonPatch(PODS, ns, pod, [
      {
        op: "add",
        path: `/metadata/annotations/${FINISH_AT_ANNOTATION.replace("/", "~1")}`,
        value: new Date().toISOString(),
      },
    ]);
  };
  const pods = watchLoop<V1Pod>(client, PODS, ns, abort.signal, (pod, type) => {
    const name = pod.metadata?.name ?? "";
    const agent = pod.metadata?.labels?.["agents.re-cinq.com/agent"];
    if (!agent || type === "BOOKMARK") return;
    if (type === "DELETED" || pod.metadata?.deletionTimestamp) {
      runs.get(name)?.abort();
      return;
    }
    const scripted = pod.metadata?.annotations?.[SCRIPTED_ANNOTATION] === "true";
    if (pod.status?.phase !== "Running" || !scripted || runs.has(name)) return;
    const run = new AbortController();
    runs.set(name, run);
    const r: RunRetries = { count: 0, waitedMs: 0 };
    retries.set(agent, r);
    void simulateRun(model.origin, o.shape, r, run.signal).then(async (done) => {
      if (done) await finishPod(name).catch((err) => log(`finishing pod ${name}: ${String(err)}`));
    });
  });
  const report = async (a: Agent) => {
    const name = a.metadata.name ?? "";
    const r = retries.get(name);
    if (!r || r.count === 0 || reported.has(name) || !r.last) return;
    reported.add(name);
    // What the run pod's report would put on the Agent when the run ends (see the header).
    for (let attempt = 0; attempt < 5; attempt++) {
      const fresh = attempt === 0 ? a : await client.get<Agent>(AGENTS, ns, name);
      if (!fresh) return;
      const outcome = await client.patchStatus(AGENTS, ns, name, fresh.metadata.resourceVersion ?? "", {
        providerRetries: {
          count: r.count,
          waitedSeconds: Math.round(r.waitedMs / 1000),
          last: {
            provider: "anthropic",
            status: r.last.status,
            at: new Date(r.last.at).toISOString().replace(/\.\d+Z$/, "Z"),
            ...(r.last.retryAfterSeconds !== undefined
              ? { retryAfterSeconds: r.last.retryAfterSeconds }
              : {}),
          },
        },
      });
      if (outcome === "ok" || outcome === "not_found") return;
    }
  };
  const agents = watchLoop<Agent>(client, AGENTS, ns, abort.signal, (a, type) => {
    if (type === "BOOKMARK" || type === "DELETED") return;
    const name = a.metadata?.name ?? "";
    const phase = a.status?.phase ?? "Pending";
    phases.set(name, phase);
    maxRunning = Math.max(maxRunning, [...phases.values()].filter((p) => p === "Running").length);
    if ((phase === "Succeeded" || phase === "Failed") && !terminal.has(name)) {
      terminal.set(name, phase);
      void report(a).catch((err) => log(`reporting ${name}'s provider retries: ${String(err)}`));
    }
  });

  const controller = await ControllerProcess.start({
    kubeconfig: plane.kubeconfig,
    server,
    namespace: ns,
    logFile: join(RESULTS, `${at.replace(/[:.]/g, "-")}-provider-${mode}-controller.log`),
    env: { PROVIDER_LEARNING: mode === "off" ? "false" : "true" },
  });
  try {
    await controller.ready(60_000);
    const names = Array.from({ length: o.agents }, (_, i) => `p-${String(i).padStart(4, "0")}`);
    log(`${mode}: creating ${o.agents} Agents; the limit allows ${allowed.toFixed(1)} runs per minute`);
    const start = Date.now();
    // learned: the Agents arrive at twice what the limit allows; otherwise all at once.
    const gapMs = mode === "learned" ? 60_000 / (allowed * 2) : 0;
    await pool(names, gapMs > 0 ? 1 : 16, async (name, i) => {
      if (gapMs > 0) await new Promise((r) => setTimeout(r, Math.max(0, start + i * gapMs - Date.now())));
      await client.create(AGENTS, ns, {
        apiVersion: "agents.re-cinq.com/v1beta1",
        kind: "Agent",
        metadata: { name },
        spec: { stationRef: "bench", parameters: { topic: "bench" } },
      });
    });
    const timeoutMs = Math.max(20 * 60_000, (o.agents / allowed) * 4 * 60_000);
    await waitUntil(`${mode}: every Agent terminal`, () => terminal.size >= o.agents, timeoutMs);
    const minutes = (Date.now() - start) / 60_000;
    // The last reports' writes.
    await new Promise((r) => setTimeout(r, 2000));
    const succeeded = [...terminal.values()].filter((p) => p === "Succeeded").length;
    const failed = o.agents - succeeded;
    const faultFree = succeeded * perRunTokens;
    const result: ModeResult = {
      mode,
      succeeded,
      failed,
      minutes,
      runsPerMinute: succeeded / minutes,
      allowedRunsPerMinute: allowed,
      ratio: succeeded / minutes / allowed,
      tokensSpent: model.counts.tokens,
      tokensFaultFree: faultFree,
      tokensBeyondFaultFreePct:
        faultFree > 0 ? ((model.counts.tokens - faultFree) / faultFree) * 100 : Number.NaN,
      throttled: model.counts.throttled,
      runsThrottled: [...retries.values()].filter((r) => r.count > 0).length,
      maxRunning,
    };
    log(`${mode}: ${succeeded} succeeded, ${failed} failed in ${minutes.toFixed(2)} min`);
    return result;
  } finally {
    abort.abort();
    for (const r of runs.values()) r.abort();
    await Promise.allSettled([pods, agents]);
    await controller.stop();
    await model.stop();
  }
}

export async function providerLimitsBench(argv: string[]): Promise<void> {
  const o = parse(argv);
  if (o.build) await build();
  mkdirSync(RESULTS, { recursive: true });
  const at = new Date().toISOString();
  log(
    `provider limits: N = ${o.agents}, ${o.rpm} requests and ${o.tpm} tokens per minute, runs of ${o.shape.requests} requests × ${o.shape.inputTokens}+${o.shape.outputTokens} tokens, ${o.latencyMs} ms each, deadline ${o.deadlineMinutes} min; load ${load().join(" ")}`,
  );
  const { plane, client, server } = await startBenchPlane();
  const results: ModeResult[] = [];
  try {
    for (const mode of o.modes) results.push(await runMode(o, mode, plane, client, server, at));
  } finally {
    await client.close();
    await plane.stop();
  }
  const col = (f: (r: ModeResult) => string) => results.map(f);
  const rows: [string, ...string[]][] = [
    ["figure (target)", ...col((r) => r.mode)],
    ["completed runs per minute", ...col((r) => r.runsPerMinute.toFixed(1))],
    ["  what the limit allows", ...col((r) => r.allowedRunsPerMinute.toFixed(1))],
    ["  ratio (≥ 0.9)", ...col((r) => r.ratio.toFixed(2))],
    ["runs failed (0)", ...col((r) => String(r.failed))],
    ["tokens beyond a fault-free run, % (≤ 5)", ...col((r) => r.tokensBeyondFaultFreePct.toFixed(1))],
    ["tokens spent / fault-free", ...col((r) => `${r.tokensSpent}/${r.tokensFaultFree}`)],
    ["429s answered (runs that met one)", ...col((r) => `${r.throttled} (${r.runsThrottled})`)],
    ["most runs Running at once", ...col((r) => String(r.maxRunning))],
    ["minutes until the last Agent ended", ...col((r) => r.minutes.toFixed(2))],
  ];
  console.log(
    `\nprovider limits, N = ${o.agents} (runs are kwok pods whose model requests the benchmark makes, riding out 429s as the supervisor does; see docs/provider-limits.md#benchmark)`,
  );
  for (const [k, ...v] of rows) console.log(`${k.padEnd(44)}${v.map((x) => x.padStart(12)).join("")}`);
  console.log(
    `\nwrote ${writeResult(`${at.replace(/[:.]/g, "-")}-provider-limits-n${o.agents}.json`, {
      mode: "provider-limits",
      at,
      options: o,
      results,
      targets: { ratio: 0.9, failed: 0, tokensBeyondFaultFreePct: 5 },
      notes:
        "runs are kwok pods; the benchmark makes each run's model requests (riding out 429s by waiting the retry-after and resuming) and writes status.providerRetries on a throttled run's Agent, standing in for the run pod's supervisor",
    })}`,
  );
}
