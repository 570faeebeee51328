/**
 * `npm run bench -- --gateway [--streams N] [--rss-streams M] [--events E] [--pace-ms P]
 * [--rounds R] [--abort-every K] [--body-kib B]`: a benchmark, not a test (docs/gateway.md#benchmark).
 *
 * One run, side by side, the same streaming workload (workload.ts) against a paced fake Anthropic
 * Messages provider (fake-provider.ts) sent (a) directly to it, (b) through a minimal undici
 * pass-through (the floor) and (c) through the gateway, each in a process of its own
 * (children.ts): N concurrent streams per path, then M through the pass-through and the gateway
 * for their RSS. Then every gateway stream's metered usage is compared with the fake's journal of
 * what it sent. Prints a table and writes bench/results/<time>-gateway.json (gitignored).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { issueRunCredential } from "../../src/core/run-job/gateway-credential.js";
import type { UsageRecord } from "../../src/gateway/ports.js";
import { freePorts } from "../../test/harness/ports.js";
import { load, log, mib, RESULTS, waitUntil, writeResult } from "../lib.js";
import { bundleChildren, Child, sampleRss } from "./children.js";
import {
  added,
  compareUsage,
  type GatewayBenchArgs,
  type JournalStream,
  parseGatewayArgs,
  type Summary,
  summarize,
} from "./report.js";
import { type PhaseResult, runPhase, type Target } from "./workload.js";

/** The targets the issue's benchmark names (docs/gateway.md#benchmark). */
export const TARGETS = {
  addedEventP50Ms: 0.5,
  addedEventP99Ms: 5,
  addedTtfbP50Ms: 1,
  gatewayRssMiBAt500: 150,
  meteredEqualJournalShare: 1,
};

interface PhaseFigures {
  target: Target["name"];
  concurrency: number;
  streams: number;
  aborted: number;
  failures: string[];
  wallSeconds: number;
  eventDelayMs: Summary;
  ttfbMs: Summary;
  /** The proxy process's (not the direct path's). */
  cpuSeconds?: number;
  streamsPerCoreSecond?: number;
  rssIdleMiB?: number;
  rssPeakMiB?: number;
}

let phasesRun = 0;

async function phase(
  target: Target,
  proxy: Child | undefined,
  concurrency: number,
  a: GatewayBenchArgs,
): Promise<PhaseFigures> {
  log(`${target.name}: ${concurrency} concurrent streams × ${a.rounds} rounds`);
  const rssIdle = proxy?.rssBytes();
  const cpu0 = await proxy?.ask<number>("cpuSeconds");
  const rss = proxy && sampleRss(proxy);
  phasesRun += 1;
  const r: PhaseResult = await runPhase(target, {
    phase: phasesRun,
    concurrency,
    events: a.events,
    paceMs: a.paceMs,
    rounds: a.rounds,
    abortEvery: a.abortEvery,
    bodyKib: a.bodyKib,
  });
  const rssPeak = rss?.stop();
  const cpu1 = await proxy?.ask<number>("cpuSeconds");
  const cpuSeconds = cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined;
  if (r.failures.length > 0)
    log(`${target.name}: ${r.failures.length} failed streams, first: ${r.failures[0]}`);
  return {
    target: target.name,
    concurrency,
    streams: r.streams,
    aborted: r.aborted,
    failures: r.failures.slice(0, 20),
    wallSeconds: Number(r.wallSeconds.toFixed(2)),
    eventDelayMs: summarize(r.delaysMs),
    ttfbMs: summarize(r.ttfbMs),
    ...(cpuSeconds !== undefined
      ? {
          cpuSeconds: Number(cpuSeconds.toFixed(3)),
          streamsPerCoreSecond: Math.round(r.streams / cpuSeconds),
        }
      : {}),
    ...(rssIdle !== undefined ? { rssIdleMiB: mib(rssIdle) } : {}),
    ...(rssPeak !== undefined ? { rssPeakMiB: mib(rssPeak) } : {}),
  };
}

function printTable(title: string, header: string[], rows: string[][]) {
  console.log(`\n${title}`);
  for (const [k, ...cells] of [header, ...rows]) {
    console.log(`${(k ?? "").padEnd(44)}${cells.map((c) => c.padStart(15)).join("")}`);
  }
}

export async function gatewayBench(argv: string[]): Promise<void> {
  const a = parseGatewayArgs(argv);
  const at = new Date().toISOString();
  const stamp = at.replace(/[:.]/g, "-");
  const loads: Record<string, number[]> = { start: load() };
  mkdirSync(RESULTS, { recursive: true });
  const logFile = join(RESULTS, `${stamp}-gateway.log`);
  const dir = mkdtempSync(join(tmpdir(), "bench-gateway-"));
  const key = randomBytes(32).toString("hex");
  writeFileSync(join(dir, "credential-key"), key);
  mkdirSync(join(dir, "keys"));
  writeFileSync(join(dir, "keys", "ANTHROPIC_API_KEY"), "sk-ant-bench-provider-key");
  const children: Child[] = [];
  try {
    log(`bundling the child processes; load ${loads.start?.join(" ")}; children's stderr: ${logFile}`);
    await bundleChildren();
    const fake = await Child.start(
      "fake-provider-child",
      { BENCH_EVENTS: String(a.events), BENCH_PACE_MS: String(a.paceMs) },
      logFile,
    );
    children.push(fake);
    const origin = String(fake.ready.origin);
    const passthrough = await Child.start("passthrough-child", { BENCH_UPSTREAM: origin }, logFile);
    children.push(passthrough);
    const [port, metricsPort] = await freePorts(2);
    const gateway = await Child.start(
      "gateway-child",
      {
        GATEWAY_CREDENTIAL_KEY_FILE: join(dir, "credential-key"),
        GATEWAY_MODE: "standalone",
        GATEWAY_PROVIDER_KEYS_DIR: join(dir, "keys"),
        GATEWAY_ANTHROPIC_UPSTREAM: origin,
        GATEWAY_OPENAI_UPSTREAM: origin,
        GATEWAY_GEMINI_UPSTREAM: origin,
        GATEWAY_HOST: "127.0.0.1",
        GATEWAY_PORT: String(port),
        GATEWAY_METRICS_PORT: String(metricsPort),
      },
      logFile,
    );
    children.push(gateway);

    const keyBytes = Buffer.from(key);
    const targets: Record<Target["name"], Target> = {
      direct: { name: "direct", origin, headers: () => ({ "x-api-key": "sk-ant-bench-direct" }) },
      passthrough: {
        name: "passthrough",
        origin: `http://127.0.0.1:${passthrough.ready.port}`,
        headers: () => ({ "x-api-key": "sk-ant-bench-direct" }),
      },
      gateway: {
        name: "gateway",
        origin: `http://127.0.0.1:${gateway.ready.port}`,
        headers: (id) => ({
          "x-api-key": issueRunCredential(keyBytes, {
            namespace: "bench",
            name: id,
            uid: randomUUID(),
            vendor: "anthropic",
          }),
        }),
      },
    };
    const proxyOf = { direct: undefined, passthrough, gateway };
    const latency: PhaseFigures[] = [];
    for (const name of ["direct", "passthrough", "gateway"] as const) {
      latency.push(await phase(targets[name], proxyOf[name], a.streams, a));
    }
    loads.latencyEnd = load();
    const memory: PhaseFigures[] = [];
    for (const name of ["passthrough", "gateway"] as const) {
      memory.push(await phase(targets[name], proxyOf[name], a.rssStreams, a));
    }
    loads.end = load();

    // The gateway reads an aborted stream's upstream to its end before it records it.
    const journal = (await fake.ask<JournalStream[]>("journal")).filter((s) => s.id.startsWith("gateway-"));
    await waitUntil(
      "a usage record for every gateway stream",
      async () => (await gateway.ask<number>("count")) >= journal.length,
      a.events * a.paceMs + 30_000,
    ).catch((err: Error) => log(err.message));
    const records = await gateway.ask<UsageRecord[]>("usage");
    const usage = compareUsage(
      journal,
      records.map((r) => ({
        id: r.run.name,
        ...(r.usage ? { usage: r.usage } : {}),
        clientAborted: r.clientAborted,
        complete: r.complete,
      })),
    );

    const [direct, pass, gw] = latency as [PhaseFigures, PhaseFigures, PhaseFigures];
    const gwMemory = memory[1] as PhaseFigures;
    const passMemory = memory[0] as PhaseFigures;
    const share = usage.streams === 0 ? 0 : usage.equal / usage.streams;
    const result = {
      mode: "gateway",
      at,
      load: loads,
      node: process.version,
      cpus: cpus().length,
      args: a,
      latency,
      memory,
      added: {
        passthrough: {
          eventMs: added(pass.eventDelayMs, direct.eventDelayMs),
          ttfbMs: added(pass.ttfbMs, direct.ttfbMs),
        },
        gateway: {
          eventMs: added(gw.eventDelayMs, direct.eventDelayMs),
          ttfbMs: added(gw.ttfbMs, direct.ttfbMs),
        },
      },
      usage: { ...usage, equalShare: share, mismatched: usage.mismatched.slice(0, 20) },
      targets: TARGETS,
      notes:
        "event delay: client receive time minus the fake's send time carried in each delta (one clock for both processes: CLOCK_MONOTONIC through process.hrtime); added: the path's percentile minus the direct path's (events are not paired); ttfb: request start to the first body byte; first stream of each client left out (warm-up); streamsPerCoreSecond: streams of the phase over the proxy process's CPU seconds in it; RSS: /proc VmRSS sampled every 100 ms during the phase",
    };
    const f = (s: Summary) => `${s.p50.toFixed(2)}/${s.p99.toFixed(2)}`;
    const g = result.added.gateway;
    const p = result.added.passthrough;
    printTable(
      `gateway bench: ${a.streams} streams × ${a.events} events every ${a.paceMs} ms, ${a.rounds} rounds, every ${a.abortEvery || "–"}th aborted${a.bodyKib ? `, ${a.bodyKib} KiB of history per request` : ""}; load (1/5/15 min) at start ${loads.start?.join(" ")}, end ${loads.end?.join(" ")}`,
      ["figure", "direct", "pass-through", "gateway", "target"],
      [
        [
          `event delay p50/p99 (ms) at ${a.streams}`,
          f(direct.eventDelayMs),
          f(pass.eventDelayMs),
          f(gw.eventDelayMs),
          "",
        ],
        [
          "added per event p50/p99 (ms)",
          "",
          `${p.eventMs.p50}/${p.eventMs.p99}`,
          `${g.eventMs.p50}/${g.eventMs.p99}`,
          "≤0.5/≤5",
        ],
        ["time to first byte p50/p99 (ms)", f(direct.ttfbMs), f(pass.ttfbMs), f(gw.ttfbMs), ""],
        ["added time to first byte p50 (ms)", "", String(p.ttfbMs.p50), String(g.ttfbMs.p50), "≤1"],
        [
          "streams per CPU second of the proxy",
          "",
          String(pass.streamsPerCoreSecond),
          String(gw.streamsPerCoreSecond),
          "",
        ],
        [
          `RSS idle/peak (MiB) at ${a.streams}`,
          "",
          `${pass.rssIdleMiB}/${pass.rssPeakMiB}`,
          `${gw.rssIdleMiB}/${gw.rssPeakMiB}`,
          "",
        ],
        [
          `RSS peak (MiB) at ${a.rssStreams}`,
          "",
          String(passMemory.rssPeakMiB),
          String(gwMemory.rssPeakMiB),
          "≤150",
        ],
        [
          "metered = journal (streams; aborted)",
          "",
          "",
          `${usage.equal}/${usage.streams}; ${usage.equalAborted}/${usage.abortedStreams}`,
          "100 %",
        ],
        [
          "failed streams",
          String(direct.failures.length),
          String(pass.failures.length + passMemory.failures.length),
          String(gw.failures.length + gwMemory.failures.length),
          "0",
        ],
      ],
    );
    if (usage.unmetered.length + usage.mismatched.length + usage.unexpected.length > 0) {
      log(
        `usage: ${usage.unmetered.length} unmetered, ${usage.mismatched.length} mismatched, ${usage.unexpected.length} unexpected (first: ${JSON.stringify(usage.mismatched[0] ?? usage.unmetered[0] ?? usage.unexpected[0])})`,
      );
    }
    console.log(`\nwrote ${writeResult(`${stamp}-gateway.json`, result)}`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
