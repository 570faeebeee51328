/**
 * `npm run bench [-- --agents N]`: a benchmark, not a test. On a fresh local control plane (kwok
 * completes the pods), N Agents go through the controller; beside that, the raw limit: the same
 * Job creates and status patches issued directly with no controller. Prints a table and writes
 * bench/results/<timestamp>.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeConfig, type V1Job } from "@kubernetes/client-node";
import { KubeClient } from "../src/controller/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, STATIONS } from "../src/controller/kube/resources.js";
import { buildJob } from "../src/core/job-builder.js";
import type { Agent, AgentDefinition, Station } from "../src/core/types.js";
import { installCrds, startControlPlane } from "../test/harness/cluster.js";
import { projectCrdFiles } from "../test/harness/global-setup.js";
import { podScriptAnnotations } from "../test/harness/pod-script.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

function argN(): number {
  const i = process.argv.indexOf("--agents");
  if (i < 0) return 1000;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--agents must be a positive integer, got: "${process.argv[i + 1]}"`);
  return n;
}

/** Runs `fn` over items with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number) : Number.NaN;
};

async function setupNamespace(client: KubeClient, ns: string, n: number) {
  await client.request("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
  const def: AgentDefinition = {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def", namespace: ns },
    spec: { prompt: "Summarise {topic}.", model: "claude-sonnet-4-5", execution: "interactive" },
  } as AgentDefinition;
  const station: Station = {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: "bench", namespace: ns },
    spec: {
      agentDefRef: "def",
      deadlineMinutes: 30,
      maxConcurrentRuns: n,
      successfulRunsHistoryLimit: n,
      failedRunsHistoryLimit: n,
      template: {
        metadata: {
          annotations: podScriptAnnotations({ exitCode: 0, runTime: "1s", logs: { agent: "bench run" } }),
        },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  } as Station;
  await client.create(AGENT_DEFINITIONS, ns, def);
  await client.create(STATIONS, ns, station);
  return { def, station };
}

const agentObj = (ns: string, name: string) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name, namespace: ns },
  spec: { stationRef: "bench", parameters: { topic: "bench" } },
});

/** Watches Agents and records when each was first seen Running and terminal. */
function observe(client: KubeClient, ns: string, signal: AbortSignal) {
  const running = new Map<string, number>();
  const terminal = new Map<string, number>();
  const loop = (async () => {
    let rv = (await client.list<Agent>(AGENTS, ns)).resourceVersion;
    while (!signal.aborted) {
      try {
        await client.watch<Agent>(AGENTS, ns, { resourceVersion: rv, timeoutSeconds: 60, signal }, (e) => {
          const name = e.object.metadata?.name ?? "";
          if (e.object.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
          const phase = e.object.status?.phase;
          const t = Date.now();
          if ((phase === "Running" || phase === "Succeeded" || phase === "Failed") && !running.has(name))
            running.set(name, t);
          if ((phase === "Succeeded" || phase === "Failed") && !terminal.has(name)) terminal.set(name, t);
        });
      } catch {
        if (signal.aborted) return;
        rv = (await client.list<Agent>(AGENTS, ns)).resourceVersion;
      }
    }
  })();
  return { running, terminal, loop };
}

async function waitUntil(what: string, check: () => boolean, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main() {
  const n = argN();
  const log = (m: string) => console.error(`[bench] ${m}`);
  log(`starting control plane (watch cache on, as in production); N = ${n}`);
  const plane = await startControlPlane({ watchCache: true });
  let child: ChildProcess | undefined;
  try {
    await installCrds(plane.api(), projectCrdFiles());
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfig);
    const client = await KubeClient.fromKubeConfig(kc);
    const names = Array.from({ length: n }, (_, i) => `b-${i}`);

    // Raw limit: the same writes with no controller (create Agent, create Job, patch Running, patch Succeeded).
    const rawNs = "bench-raw";
    const raw = await setupNamespace(client, rawNs, n);
    const settings = {
      namespace: rawNs,
      agentImage: "example.test/init:1",
      maxOutputBytes: 262144,
      batchEnabled: false,
      realtimeEnabled: false,
      batchPollSeconds: 60,
    };
    const rawClient = await KubeClient.fromKubeConfig(kc);
    log("raw: issuing the writes directly");
    const rawStart = Date.now();
    const rawRunning: number[] = [];
    await pool(names, 32, async (name) => {
      const t0 = Date.now();
      const created = await rawClient.create(AGENTS, rawNs, agentObj(rawNs, name));
      const agent = created.object as unknown as Agent;
      const built = buildJob(agent, raw.station, raw.def, settings, "interactive");
      if (!("job" in built)) throw new Error(`raw: job builder refused: ${JSON.stringify(built)}`);
      await rawClient.create<V1Job>(JOBS, rawNs, built.job as V1Job);
      const rv = agent.metadata.resourceVersion ?? "";
      await rawClient.patchStatus(AGENTS, rawNs, name, rv, {
        phase: "Running",
        jobName: built.job.metadata?.name,
      });
      rawRunning.push(Date.now() - t0);
    });
    const rawRunningSecs = (Date.now() - rawStart) / 1000;
    await pool(names, 32, async (name) => {
      const a = await rawClient.get<Agent>(AGENTS, rawNs, name);
      await rawClient.patchStatus(AGENTS, rawNs, name, a?.metadata.resourceVersion ?? "", {
        phase: "Succeeded",
        exitCode: 0,
      });
    });
    const rawTerminalSecs = (Date.now() - rawStart) / 1000;
    const rawRequests = rawClient.requestCount;
    log(`raw: ${rawRunningSecs.toFixed(2)} s to Running, ${rawTerminalSecs.toFixed(2)} s to terminal`);

    // Controller run.
    const ns = "bench-ctrl";
    await setupNamespace(client, ns, n);
    child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "bench/controller-child.ts")], {
      env: { ...process.env, KUBECONFIG: plane.kubeconfig, NAMESPACE: ns, POD_NAME: "bench-controller" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines: string[] = [];
    let buf = "";
    child.stdout?.on("data", (c: Buffer) => {
      buf += c.toString();
      let i = buf.indexOf("\n");
      while (i >= 0) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
        i = buf.indexOf("\n");
      }
    });
    await waitUntil("controller ready", () => lines.some((l) => l.includes('"ready"')), 60_000);
    const abort = new AbortController();
    const obs = observe(client, ns, abort.signal);
    // Let the controller take the Lease (first tick) and sync.
    await new Promise((r) => setTimeout(r, 1000));
    log("controller: creating Agents");
    const createdAt = new Map<string, number>();
    const start = Date.now();
    await pool(names, 32, async (name) => {
      createdAt.set(name, Date.now());
      await client.create(AGENTS, ns, agentObj(ns, name));
    });
    const timeout = Math.max(300_000, n * 1000);
    await waitUntil("every Agent Running", () => obs.running.size >= n, timeout);
    const toRunningSecs = (Math.max(...obs.running.values()) - start) / 1000;
    await waitUntil("every Agent terminal", () => obs.terminal.size >= n, timeout);
    const toTerminalSecs = (Math.max(...obs.terminal.values()) - start) / 1000;
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
    child.kill("SIGTERM");
    await waitUntil("controller report", () => lines.some((l) => l.includes('"requests"')), 60_000);
    const report = JSON.parse(lines.find((l) => l.includes('"requests"')) as string) as {
      requests: number;
      cpuSeconds: number;
      peakRssBytes: number;
    };
    child = undefined;

    const result = {
      agents: n,
      at: new Date().toISOString(),
      controller: {
        agentsPerSecondToRunning: n / toRunningSecs,
        agentsPerSecondToTerminal: n / toTerminalSecs,
        creationToRunningMs: { p50: pct(latencies, 50), p99: pct(latencies, 99) },
        jobCompleteToTerminalMs: { p50: pct(readBack, 50), p99: pct(readBack, 99) },
        apiRequestsPerAgent: report.requests / n,
        cpuSeconds: report.cpuSeconds,
        peakRssMiB: report.peakRssBytes / 1024 / 1024,
      },
      raw: {
        agentsPerSecondToRunning: n / rawRunningSecs,
        agentsPerSecondToTerminal: n / rawTerminalSecs,
        creationToRunningMs: { p50: pct(rawRunning, 50), p99: pct(rawRunning, 99) },
        apiRequestsPerAgent: rawRequests / n,
      },
      notes:
        "terminal includes kwok's 1 s pod run time for the controller; the raw path patches Succeeded without waiting for pods",
    };
    const rows: [string, string, string][] = [
      [
        "Agents/s to Running",
        result.controller.agentsPerSecondToRunning.toFixed(1),
        result.raw.agentsPerSecondToRunning.toFixed(1),
      ],
      [
        "Agents/s to terminal",
        result.controller.agentsPerSecondToTerminal.toFixed(1),
        result.raw.agentsPerSecondToTerminal.toFixed(1),
      ],
      [
        "creation → Running p50 (ms)",
        String(result.controller.creationToRunningMs.p50),
        String(result.raw.creationToRunningMs.p50),
      ],
      [
        "creation → Running p99 (ms)",
        String(result.controller.creationToRunningMs.p99),
        String(result.raw.creationToRunningMs.p99),
      ],
      [
        "Job complete → terminal p50/p99 (ms, ±1000)",
        `${result.controller.jobCompleteToTerminalMs.p50}/${result.controller.jobCompleteToTerminalMs.p99}`,
        "-",
      ],
      [
        "API requests per Agent",
        result.controller.apiRequestsPerAgent.toFixed(2),
        result.raw.apiRequestsPerAgent.toFixed(2),
      ],
      ["controller CPU seconds", result.controller.cpuSeconds.toFixed(2), "-"],
      ["controller peak RSS (MiB)", result.controller.peakRssMiB.toFixed(1), "-"],
    ];
    console.log(`\nN = ${n}\n${"metric".padEnd(44)}${"controller".padStart(12)}${"raw".padStart(12)}`);
    for (const [k, c, r] of rows) console.log(`${k.padEnd(44)}${c.padStart(12)}${r.padStart(12)}`);
    const dir = join(ROOT, "bench/results");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${result.at.replace(/[:.]/g, "-")}-n${n}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nwrote ${file}`);
    await client.close();
    await rawClient.close();
  } finally {
    child?.kill("SIGKILL");
    await plane.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
