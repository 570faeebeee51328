/**
 * `npm run bench -- --scale [--scale-agents M] [--output-bytes B]`: the controller holding M
 * (default 10,000) Agents in one namespace. Before the controller starts, the bench writes:
 * - M terminal Agents of Station `history` (history limits above M, so none is pruned), each
 *   created and then given a terminal status (phase, exitCode, times, conditions and an output of
 *   B bytes, default 2 KiB) directly, 48 writes in flight; one in ten Failed;
 * - 100 Running Agents of Station `busy` (maxConcurrentRuns 100) with their Jobs (pods run 2 h),
 *   and 100 Pending Agents queued behind them.
 * Then it starts the compiled controller and reports: process start → ready (leader, every cache
 * filled by its paginated LIST, the first reconciles under way), RSS and heap with everything
 * cached, the CPU of the idle minute per 15 s poll interval (the poll re-lists and reconciles
 * every Agent), the API requests per idle minute, and creation → Job latency of 20 new Agents of
 * Station `history` (one at a time) while the cache is full.
 */
import { join } from "node:path";
import type { V1Job } from "@kubernetes/client-node";
import { buildJob } from "../src/core/run-job/job.js";
import { jobNameFor } from "../src/core/run-job/names.js";
import type { Agent } from "../src/core/types.js";
import { AGENTS, JOBS } from "../src/kube/resources.js";
import {
  type Args,
  agentObj,
  ControllerProcess,
  cpuPerPollCycle,
  createNamespace,
  deploymentNodeOptions,
  diagnosticArgs,
  isLease,
  load,
  log,
  mib,
  observeJobs,
  pct,
  pool,
  printRows,
  RESULTS,
  requestDelta,
  rssBreakdown,
  setupStation,
  startBenchPlane,
  sum,
  waitUntil,
  writeResult,
} from "./lib.js";

const RUNNING = 100;
const PENDING = 100;
const LATENCY_SAMPLES = 20;

function outputBytes(): number {
  const i = process.argv.indexOf("--output-bytes");
  const n = i < 0 ? 2048 : Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--output-bytes must be an integer ≥ 0, got: "${process.argv[i + 1]}"`);
  return n;
}

/** Lines like a CLI's stream-json output, `bytes` long. */
function outputText(bytes: number): string {
  const line =
    '{"type":"assistant","message":{"content":[{"type":"text","text":"bench run output line"}]}}\n';
  return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
}

const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");

function terminalStatus(i: number, now: number, output: string) {
  const failed = i % 10 === 9;
  const completed = now - (i + 1) * 1000;
  const started = completed - 60_000;
  const cond = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: iso(completed),
    observedGeneration: 1,
  });
  const why = "BackoffLimitExceeded: Job has reached the specified backoff limit";
  return {
    phase: failed ? "Failed" : "Succeeded",
    exitCode: failed ? 2 : 0,
    jobName: jobNameFor(`h-${i}`),
    startedAt: iso(started),
    completedAt: iso(completed),
    output,
    ...(failed ? { failureReason: why } : {}),
    conditions: failed
      ? [cond("Ready", "False", "Failed", why), cond("Failed", "True", "JobFailed", why)]
      : [
          cond("Ready", "False", "Succeeded", "the run has finished"),
          cond("Complete", "True", "Succeeded", "the run succeeded (exit code 0)"),
        ],
  };
}

export async function scale(a: Args) {
  const m = a.scaleAgents;
  const bytes = outputBytes();
  const at = new Date().toISOString();
  const loads: { start: number[]; [phase: string]: number[] } = { start: load() };
  log(`scale: starting control plane; ${m} terminal + ${RUNNING} Running + ${PENDING} Pending Agents`);
  const { plane, client, server } = await startBenchPlane();
  let controller: ControllerProcess | undefined;
  const abort = new AbortController();
  try {
    const ns = "bench-scale";
    await createNamespace(client, ns);
    await setupStation(client, ns, {
      station: "history",
      maxConcurrentRuns: 0,
      historyLimit: 2 * m,
      runTime: "1s",
    });
    const busy = await setupStation(client, ns, {
      station: "busy",
      maxConcurrentRuns: RUNNING,
      historyLimit: 3,
      runTime: "2h",
      createDef: false,
    });

    log(`scale: writing ${m} terminal Agents (create, then status), 48 in flight`);
    const output = outputText(bytes);
    const setupStart = Date.now();
    const now = Date.now();
    await pool(
      Array.from({ length: m }, (_, i) => i),
      48,
      async (i) => {
        const name = `h-${i}`;
        const created = await client.create(AGENTS, ns, agentObj(ns, name, "history"));
        const rv = (created.object as unknown as Agent).metadata.resourceVersion ?? "";
        const r = await client.patchStatus(AGENTS, ns, name, rv, terminalStatus(i, now, output));
        if (r !== "ok") throw new Error(`status of ${name}: ${r}`);
        if (i > 0 && i % 2000 === 0) log(`scale: ${i} written`);
      },
    );
    log(
      `scale: ${m} terminal Agents in ${((Date.now() - setupStart) / 1000).toFixed(0)} s; Running and Pending`,
    );
    const settings = {
      namespace: ns,
      agentImage: "example.test/init:1",
      maxOutputBytes: 262144,
      batchEnabled: false,
      realtimeEnabled: false,
      batchPollSeconds: 60,
    };
    await pool(
      Array.from({ length: RUNNING }, (_, i) => `r-${i}`),
      16,
      async (name) => {
        const agent = (await client.create(AGENTS, ns, agentObj(ns, name, "busy")))
          .object as unknown as Agent;
        const built = buildJob(agent, busy.station, busy.def, settings, "interactive");
        if (!built.ok) throw new Error(built.reason);
        await client.create<V1Job>(JOBS, ns, built.job as V1Job);
        await client.patchStatus(AGENTS, ns, name, agent.metadata.resourceVersion ?? "", {
          phase: "Running",
          jobName: built.job.metadata?.name,
          startedAt: iso(Date.now()),
        });
      },
    );
    await pool(
      Array.from({ length: PENDING }, (_, i) => `p-${i}`),
      16,
      async (name) => {
        await client.create(AGENTS, ns, agentObj(ns, name, "busy"));
      },
    );
    const setupSecs = (Date.now() - setupStart) / 1000;

    loads.controller = load();
    log(
      `scale: setup took ${setupSecs.toFixed(0)} s; starting the controller (load ${loads.controller.join(" ")})`,
    );
    controller = await ControllerProcess.start({
      kubeconfig: plane.kubeconfig,
      server,
      namespace: ns,
      logFile: join(RESULTS, `${at.replace(/[:.]/g, "-")}-scale-controller.log`),
      nodeArgs: diagnosticArgs(a),
    });
    const readyMs = await controller.ready(300_000);
    log(`scale: ready after ${readyMs} ms; waiting until the Pending Agents show Queued`);
    await waitUntil(
      "the Pending Agents queued",
      async () => {
        const agents = (await client.list<Agent>(AGENTS, ns)).items;
        return (
          agents.filter((x) => x.status?.conditions?.some((c) => c.type === "Queued" && c.status === "True"))
            .length >= PENDING
        );
      },
      300_000,
    );
    // One full poll after the start-up work, so the idle minute starts idle.
    await new Promise((r) => setTimeout(r, 20_000));
    const full = await controller.stats(true);
    log(
      `scale: heap after GC ${mib(full.heapAfterGcBytes ?? 0)} MiB, RSS ${mib(full.rssBytes)} MiB; idle minute`,
    );
    loads.idle = load();
    const i0 = await controller.stats();
    await new Promise((r) => setTimeout(r, a.idleSeconds * 1000));
    const i1 = await controller.stats(true);
    const idle = requestDelta(i0, i1);
    const idleMinutes = (i1.at - i0.at) / 60_000;

    log(`scale: creation → Job latency, ${LATENCY_SAMPLES} Agents one at a time`);
    const jobs = observeJobs(client, ns, abort.signal);
    await new Promise((r) => setTimeout(r, 1000));
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const name = `l-${i}`;
      const t0 = Date.now();
      await client.create(AGENTS, ns, agentObj(ns, name, "history"));
      await waitUntil(`Job of ${name}`, () => jobs.seen.has(jobNameFor(name)), 120_000);
      latencies.push((jobs.seen.get(jobNameFor(name)) as number) - t0);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const end = await controller.stats(true);
    loads.end = load();
    abort.abort();
    await controller.stop();
    controller = undefined;

    const result = {
      mode: "scale",
      nodeOptions: process.env.BENCH_NODE_OPTIONS ?? deploymentNodeOptions(),
      at,
      agents: { terminal: m, running: RUNNING, pending: PENDING, outputBytes: bytes },
      load: loads,
      setupSeconds: setupSecs,
      controller: {
        startToReadyMs: readyMs,
        startupCpuSeconds: full.cpuSeconds,
        rssMiB: mib(full.rssBytes),
        heapAfterGcMiB: mib(full.heapAfterGcBytes ?? 0),
        rssAfterGcMiB: mib(full.rssAfterGcBytes ?? 0),
        peakRssMiB: mib(end.peakRssBytes),
        peakHeapUsedMiB: mib(end.peakHeapUsedBytes),
        memoryAllCached: rssBreakdown(full.now),
        memoryAtPeakRss: rssBreakdown(end.atPeakRss),
        idle: {
          cpuSecondsPer15s: ((i1.cpuSeconds - i0.cpuSeconds) / ((i1.at - i0.at) / 1000)) * 15,
          perPollCycle: cpuPerPollCycle(i1, i0.at, i1.at),
          requestsPerMinuteBesidesLease: sum(idle, (k) => !isLease(k)) / idleMinutes,
          leaseRequestsPerMinute: sum(idle, isLease) / idleMinutes,
          requests: idle,
        },
        creationToJobMs: { p50: pct(latencies, 50), p99: pct(latencies, 99), max: Math.max(...latencies) },
      },
      targets: { rssMiB: 150, pollCpuSeconds: 0.2, idleRequestsPerMinuteBesidesLease: 2 },
    };
    const c = result.controller;
    printRows(`scale: ${m} terminal + ${RUNNING} Running + ${PENDING} Pending, output ${bytes} B each`, [
      ["load (1/5/15 min) at controller start / end", loads.controller.join(" "), loads.end.join(" ")],
      ["controller start → ready (ms)", String(c.startToReadyMs)],
      ["RSS / heap after GC, all cached (MiB)", `${c.rssMiB}/${c.heapAfterGcMiB}`],
      ["peak RSS / peak heap used (MiB)", `${c.peakRssMiB}/${c.peakHeapUsedMiB}`],
      ["idle CPU s per 15 s (one poll)", c.idle.cpuSecondsPer15s.toFixed(3)],
      [
        "idle CPU s per poll cycle (cycles, cycle s)",
        c.idle.perPollCycle
          ? `${c.idle.perPollCycle.cpuSeconds.toFixed(3)} (${c.idle.perPollCycle.cycles}, ${c.idle.perPollCycle.cycleSeconds.toFixed(1)})`
          : "n/a",
      ],
      [
        "idle requests/min besides Lease (Lease)",
        `${c.idle.requestsPerMinuteBesidesLease.toFixed(1)} (${c.idle.leaseRequestsPerMinute.toFixed(1)})`,
      ],
      [
        "creation → Job p50 / p99 / max (ms)",
        `${c.creationToJobMs.p50}/${c.creationToJobMs.p99}/${c.creationToJobMs.max}`,
      ],
    ]);
    console.log(`\nwrote ${writeResult(`${at.replace(/[:.]/g, "-")}-scale-m${m}.json`, result)}`);
    await client.close();
  } finally {
    abort.abort();
    await controller?.stop();
    await plane.stop();
  }
}
