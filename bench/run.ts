/**
 * `npm run bench [-- --agents N] [--scale [--scale-agents M]] [--cpu-prof] [--heap-snapshot] [--no-build]`:
 * a benchmark, not a test. On a fresh local control plane (watch cache on, as in production; kwok
 * runs each pod for 1 s) it runs the controller as the image does (`npm run build`, then
 * `node --enable-source-maps dist/src/controller/main.js`, observed by bench/controller-probe.mjs)
 * and sets every figure beside the plane's own limit, measured in the same run:
 *
 * - **raw**: for each of N Agents, create the Agent, create the Job the core builds and patch
 *   Running, 32 in flight (the write path with no controller: the baseline for "to Running");
 *   then the same N Jobs are timed until Complete (the plane's Job completion rate: the baseline
 *   for "to terminal");
 * - **controller**: the controller alone in a namespace of its own; N Agents created 32 in flight
 *   and watched to Running and terminal; then one idle minute.
 *
 * `--scale` runs bench/scale.ts instead (10,000 Agents held in one namespace); `--prompt-api`
 * bench/prompt-latency.ts; `--cli-startup` bench/cli-startup.ts (what a run pays before its real
 * CLI's first model request); `--provider-limits` bench/provider-limits.ts (runs against a model
 * provider enforcing requests and tokens per minute, with and without the controller's throttling);
 * `--real-node` bench/real-node.ts (N Agents on the real node with the real claude: where the time
 * from `kubectl create` to the CLI's first model request goes); `--gateway` bench/gateway/run.ts (the
 * model gateway's added latency per streamed event, RSS, CPU and metering beside a direct path and a
 * minimal pass-through). Prints a table and
 * writes bench/results/<time>-n<N>.json (gitignored).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig, type V1Job } from "@kubernetes/client-node";
import { buildJob } from "../src/core/run-job/job.js";
import { jobNameFor } from "../src/core/run-job/names.js";
import type { Agent } from "../src/core/types.js";
import { KubeClient } from "../src/kube/client.js";
import { AGENTS, JOBS } from "../src/kube/resources.js";
import { cliStartup } from "./cli-startup.js";
import { gatewayBench } from "./gateway/run.js";
import {
  type Args,
  agentObj,
  build,
  ControllerProcess,
  createNamespace,
  deploymentNodeOptions,
  diagnosticArgs,
  isEvent,
  isLease,
  isListOrWatch,
  load,
  log,
  mib,
  observeAgents,
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
import { promptLatency } from "./prompt-latency.js";
import { providerLimitsBench } from "./provider-limits.js";
import { realNodeBench } from "./real-node.js";
import { scale } from "./scale.js";

function parseArgs(argv: string[]): Args {
  const value = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    if (i < 0) return fallback;
    const n = Number(argv[i + 1]);
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`${flag} must be a positive integer, got: "${argv[i + 1]}"`);
    return n;
  };
  return {
    agents: value("--agents", 1000),
    scale: argv.includes("--scale"),
    scaleAgents: value("--scale-agents", 10_000),
    cpuProf: argv.includes("--cpu-prof"),
    heapSnapshot: argv.includes("--heap-snapshot"),
    build: !argv.includes("--no-build"),
    idleSeconds: value("--idle-seconds", 60),
  };
}

async function throughput(a: Args) {
  const n = a.agents;
  const at = new Date().toISOString();
  const loads: { start: number[]; [phase: string]: number[] } = { start: load() };
  log(`starting control plane (watch cache on, as in production); N = ${n}; load ${loads.start.join(" ")}`);
  const { plane, client, server } = await startBenchPlane();
  let controller: ControllerProcess | undefined;
  const abort = new AbortController();
  try {
    const names = Array.from({ length: n }, (_, i) => `b-${i}`);

    // 1. Raw writes, then the plane completing the same Jobs.
    const rawNs = "bench-raw";
    await createNamespace(client, rawNs);
    const raw = await setupStation(client, rawNs, {
      station: "bench",
      maxConcurrentRuns: n,
      historyLimit: n,
      runTime: "1s",
    });
    const settings = {
      namespace: rawNs,
      agentImage: "example.test/init:1",
      maxOutputBytes: 262144,
      batchEnabled: false,
      realtimeEnabled: false,
      batchPollSeconds: 60,
    };
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfig);
    const rawClient = await KubeClient.fromKubeConfig(kc);
    const rawJobs = observeJobs(client, rawNs, abort.signal);
    await new Promise((r) => setTimeout(r, 1000));
    loads.raw = load();
    log("raw: issuing the writes directly");
    const rawStart = Date.now();
    const rawRunning: number[] = [];
    await pool(names, 32, async (name) => {
      const t0 = Date.now();
      const created = await rawClient.create(AGENTS, rawNs, agentObj(rawNs, name, "bench"));
      const agent = created.object as unknown as Agent;
      const built = buildJob(agent, raw.station, raw.def, settings, "interactive");
      if (!built.ok) throw new Error(`raw: job builder refused: ${built.reason}`);
      await rawClient.create<V1Job>(JOBS, rawNs, built.job as V1Job);
      await rawClient.patchStatus(AGENTS, rawNs, name, agent.metadata.resourceVersion ?? "", {
        phase: "Running",
        jobName: built.job.metadata?.name,
      });
      rawRunning.push(Date.now() - t0);
    });
    const rawRunningSecs = (Date.now() - rawStart) / 1000;
    const rawRequests = rawClient.requestCount;
    log(`raw: ${rawRunningSecs.toFixed(2)} s to Running; waiting for the plane to complete the ${n} Jobs`);
    await waitUntil("every raw Job finished", () => rawJobs.finished.size >= n, Math.max(600_000, n * 2000));
    const planeSecs = (Math.max(...rawJobs.finished.values()) - rawStart) / 1000;
    log(`plane: ${planeSecs.toFixed(1)} s until the last Job completed`);

    // 2. The controller, alone on the plane.
    const ns = "bench-ctrl";
    await createNamespace(client, ns);
    await setupStation(client, ns, {
      station: "bench",
      maxConcurrentRuns: n,
      historyLimit: n,
      runTime: "1s",
    });
    loads.controller = load();
    controller = await ControllerProcess.start({
      kubeconfig: plane.kubeconfig,
      server,
      namespace: ns,
      logFile: join(RESULTS, `${at.replace(/[:.]/g, "-")}-controller.log`),
      nodeArgs: diagnosticArgs(a),
    });
    const readyMs = await controller.ready(60_000);
    const obs = observeAgents(client, ns, abort.signal);
    const jobsObs = observeJobs(client, ns, abort.signal);
    await new Promise((r) => setTimeout(r, 1000));
    const s0 = await controller.stats();
    log("controller: creating Agents");
    const createdAt = new Map<string, number>();
    const start = Date.now();
    await pool(names, 32, async (name) => {
      createdAt.set(name, Date.now());
      await client.create(AGENTS, ns, agentObj(ns, name, "bench"));
    });
    const timeout = Math.max(600_000, n * 2000);
    await waitUntil("every Agent Running", () => obs.running.size >= n, timeout);
    const toRunningSecs = (Math.max(...obs.running.values()) - start) / 1000;
    await waitUntil("every Agent terminal", () => obs.terminal.size >= n, timeout);
    const toTerminalSecs = (Math.max(...obs.terminal.values()) - start) / 1000;
    // Let the last terminal patches' watch events and Events drain before counting.
    await new Promise((r) => setTimeout(r, 3000));
    const s1 = await controller.stats(true);
    loads.controllerEnd = load();
    if (a.heapSnapshot) controller.child.kill("SIGUSR2");
    log(`controller: all terminal; idle for ${a.idleSeconds} s`);
    const i0 = await controller.stats();
    await new Promise((r) => setTimeout(r, a.idleSeconds * 1000));
    const i1 = await controller.stats(true);
    loads.end = load();
    abort.abort();

    // Job completion (status.completionTime, 1 s resolution) → Agent terminal: the controller's
    // own share of the terminal latency, separated from how fast the plane runs the pods.
    const jobs = await client.list<V1Job>(JOBS, ns);
    const readBack: number[] = [];
    for (const j of jobs.items) {
      const owner = j.metadata?.ownerReferences?.[0]?.name ?? "";
      const done = j.status?.completionTime;
      const seen = obs.terminal.get(owner);
      if (done && seen) readBack.push(seen - new Date(done as unknown as string).getTime());
    }
    const latencies = names.map((x) => (obs.running.get(x) as number) - (createdAt.get(x) as number));
    const jobLatencies = names.map(
      (x) => (jobsObs.seen.get(jobNameFor(x)) ?? Number.NaN) - (createdAt.get(x) as number),
    );
    await controller.stop();
    controller = undefined;

    const run = requestDelta(s0, s1);
    const idle = requestDelta(i0, i1);
    const idleMinutes = (i1.at - i0.at) / 60_000;
    const perAgent = (f: (k: string) => boolean) => Number((sum(run, f) / n).toFixed(2));
    const c = {
      readyMs,
      agentsPerSecondToRunning: n / toRunningSecs,
      agentsPerSecondToTerminal: n / toTerminalSecs,
      creationToRunningMs: { p50: pct(latencies, 50), p99: pct(latencies, 99) },
      creationToJobMs: { p50: pct(jobLatencies, 50), p99: pct(jobLatencies, 99) },
      jobCompleteToTerminalMs: { p50: pct(readBack, 50), p99: pct(readBack, 99) },
      apiRequestsPerAgent: {
        total: perAgent((k) => !isLease(k)),
        reconcile: perAgent((k) => !isLease(k) && !isEvent(k) && !isListOrWatch(k)),
        events: perAgent(isEvent),
        listAndWatch: perAgent(isListOrWatch),
        byRequest: Object.fromEntries(Object.entries(run).map(([k, v]) => [k, Number((v / n).toFixed(3))])),
      },
      cpuSeconds: { run: s1.cpuSeconds - s0.cpuSeconds, startup: s0.cpuSeconds, total: s1.cpuSeconds },
      peakRssMiB: mib(s1.peakRssBytes),
      peakHeapUsedMiB: mib(s1.peakHeapUsedBytes),
      memoryAtPeakRss: rssBreakdown(s1.atPeakRss),
      heapAfterGcMiB: mib(s1.heapAfterGcBytes ?? 0),
      rssAfterGcMiB: mib(s1.rssAfterGcBytes ?? 0),
      idle: {
        requestsPerMinuteBesidesLease: sum(idle, (k) => !isLease(k)) / idleMinutes,
        leaseRequestsPerMinute: sum(idle, isLease) / idleMinutes,
        requests: idle,
        cpuSecondsPer15s: ((i1.cpuSeconds - i0.cpuSeconds) / ((i1.at - i0.at) / 1000)) * 15,
        heapAfterGcMiB: mib(i1.heapAfterGcBytes ?? 0),
      },
    };
    const baseline = {
      rawAgentsPerSecondToRunning: n / rawRunningSecs,
      rawCreationToRunningMs: { p50: pct(rawRunning, 50), p99: pct(rawRunning, 99) },
      rawApiRequestsPerAgent: rawRequests / n,
      planeJobsPerSecondToComplete: n / planeSecs,
    };
    const result = {
      mode: "throughput",
      nodeOptions: process.env.BENCH_NODE_OPTIONS ?? deploymentNodeOptions(),
      agents: n,
      at,
      load: loads,
      controller: c,
      baseline,
      ratios: {
        toRunning: c.agentsPerSecondToRunning / baseline.rawAgentsPerSecondToRunning,
        toTerminal: c.agentsPerSecondToTerminal / baseline.planeJobsPerSecondToComplete,
      },
      targets: {
        toRunningRatio: 0.9,
        toTerminalRatio: 0.9,
        apiRequestsPerAgent: 5,
        idleRequestsPerMinuteBesidesLease: 2,
      },
      notes:
        "raw: Agent create + Job create + Running patch, no controller; plane: the same raw Jobs timed from the first write until the last is Complete; controller figures exclude Lease requests",
    };
    printRows(`N = ${n}   load (1/5/15 min) at start ${loads.start.join(" ")}, end ${loads.end?.join(" ")}`, [
      ["figure", "controller", "baseline"],
      [
        "Agents/s to Running (baseline: raw writes)",
        c.agentsPerSecondToRunning.toFixed(1),
        baseline.rawAgentsPerSecondToRunning.toFixed(1),
      ],
      [
        "Agents/s to terminal (baseline: plane Jobs/s)",
        c.agentsPerSecondToTerminal.toFixed(2),
        baseline.planeJobsPerSecondToComplete.toFixed(2),
      ],
      [
        "ratio to Running / to terminal",
        result.ratios.toRunning.toFixed(2),
        result.ratios.toTerminal.toFixed(2),
      ],
      [
        "creation → Running p50 / p99 (ms)",
        `${c.creationToRunningMs.p50}/${c.creationToRunningMs.p99}`,
        `${baseline.rawCreationToRunningMs.p50}/${baseline.rawCreationToRunningMs.p99}`,
      ],
      [
        "Job complete → terminal p50/p99 (ms, ±1000)",
        `${c.jobCompleteToTerminalMs.p50}/${c.jobCompleteToTerminalMs.p99}`,
      ],
      [
        "API requests per Agent (all / reconcile / Events)",
        `${c.apiRequestsPerAgent.total}/${c.apiRequestsPerAgent.reconcile}/${c.apiRequestsPerAgent.events}`,
        baseline.rawApiRequestsPerAgent.toFixed(2),
      ],
      [
        "controller CPU s (run / start-up)",
        `${c.cpuSeconds.run.toFixed(1)}/${c.cpuSeconds.startup.toFixed(2)}`,
      ],
      ["controller peak RSS / peak heap used (MiB)", `${c.peakRssMiB}/${c.peakHeapUsedMiB}`],
      ["heap after GC, N terminal cached (MiB)", String(c.heapAfterGcMiB)],
      [
        "idle requests/min besides Lease (Lease)",
        `${c.idle.requestsPerMinuteBesidesLease.toFixed(1)} (${c.idle.leaseRequestsPerMinute.toFixed(1)})`,
      ],
      ["idle CPU s per 15 s", c.idle.cpuSecondsPer15s.toFixed(3)],
    ]);
    console.log(`\nwrote ${writeResult(`${at.replace(/[:.]/g, "-")}-n${n}.json`, result)}`);
    await client.close();
    await rawClient.close();
  } finally {
    abort.abort();
    await controller?.stop();
    await plane.stop();
  }
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (process.argv.includes("--prompt-api")) return promptLatency(process.argv.slice(2));
  if (process.argv.includes("--cli-startup")) return cliStartup(process.argv.slice(2));
  if (process.argv.includes("--provider-limits")) return providerLimitsBench(process.argv.slice(2));
  if (process.argv.includes("--real-node")) return realNodeBench(process.argv.slice(2));
  if (process.argv.includes("--gateway")) return gatewayBench(process.argv.slice(2));
  if (a.build) await build();
  mkdirSync(RESULTS, { recursive: true });
  if (a.scale) await scale(a);
  else await throughput(a);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
