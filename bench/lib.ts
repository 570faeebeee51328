/**
 * What the benchmark's modes share: the compiled controller as a child process (run the way the
 * image runs it, observed through controller-probe.mjs), the plane's namespace setup, watchers
 * that time phases, and small statistics helpers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { KubeConfig, type V1Job } from "@kubernetes/client-node";
import { parse as parseYaml } from "yaml";
import type { Agent, AgentDefinition, Station } from "../src/core/types.js";
import { KubeClient } from "../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, type Resource, STATIONS } from "../src/kube/resources.js";
import {
  type ControlPlane,
  type ControlPlaneOptions,
  installCrds,
  startControlPlane,
} from "../test/harness/cluster.js";
import { projectCrdFiles } from "../test/harness/global-setup.js";
import { podScriptAnnotations } from "../test/harness/pod-script.js";
import { freePort } from "../test/harness/ports.js";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The image's entry point (Dockerfile ENTRYPOINT), compiled by `npm run build`. */
export const CONTROLLER_MAIN = join(ROOT, "dist/src/controller/main.js");
const PROBE = join(ROOT, "bench/controller-probe.mjs");

export const log = (m: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}`);

/** 1, 5 and 15 minute load averages, as `uptime` prints them. */
export const load = () => loadavg().map((x) => Number(x.toFixed(2))) as [number, number, number];

/** Runs `fn` over items with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (x: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number) : Number.NaN;
};

export const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));

export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `npm run build`, asynchronously (the image's tsc output in dist/). */
export async function build(): Promise<void> {
  log("npm run build (the controller as the image runs it)");
  const code = await new Promise<number | null>((resolve) => {
    const p = spawn("npm", ["run", "build", "--silent"], {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
    });
    p.on("exit", resolve);
  });
  if (code !== 0) throw new Error(`npm run build failed (exit ${code})`);
  if (!existsSync(CONTROLLER_MAIN)) throw new Error(`${CONTROLLER_MAIN} missing after npm run build`);
}

export interface ProbeStats {
  at: number;
  cpuSeconds: number;
  rssBytes: number;
  peakRssBytes: number;
  heapUsedBytes: number;
  peakHeapUsedBytes: number;
  requests: number;
  requestsBy: Record<string, number>;
  /** Time and process CPU seconds at the start of each LIST of Agents (the poll's cycle). */
  agentListStarts?: { at: number; cpuSeconds: number }[];
  heapAfterGcBytes?: number;
  rssAfterGcBytes?: number;
  externalBytes?: number;
  /** What the RSS is made of now, and at the highest RSS the probe sampled (every 200 ms). */
  now?: MemoryBreakdown;
  atPeakRss?: MemoryBreakdown;
}

export interface MemoryBreakdown {
  rssBytes: number;
  heapTotalBytes?: number;
  heapUsedBytes?: number;
  externalBytes?: number;
  arrayBuffersBytes?: number;
  /** V8 heap space → committed (physical) bytes. */
  heapSpacesCommittedBytes?: Record<string, number>;
}

/**
 * Process CPU seconds per poll cycle between `from` and `to`: between the first and the last start
 * of a LIST of Agents in that window (each poll starts one), over the cycles between them. Unlike
 * CPU per 15 s of wall time it does not depend on how many polls the window happens to hold.
 */
export function cpuPerPollCycle(s: ProbeStats, from: number, to: number) {
  const starts = (s.agentListStarts ?? []).filter((x) => x.at >= from && x.at <= to);
  if (starts.length < 2) return undefined;
  const first = starts[0] as { at: number; cpuSeconds: number };
  const last = starts[starts.length - 1] as { at: number; cpuSeconds: number };
  const cycles = starts.length - 1;
  return {
    cycles,
    cpuSeconds: (last.cpuSeconds - first.cpuSeconds) / cycles,
    cycleSeconds: (last.at - first.at) / 1000 / cycles,
  };
}

/** A MemoryBreakdown in MiB. */
export function rssBreakdown(b: MemoryBreakdown | undefined) {
  if (!b) return undefined;
  return {
    rssMiB: mib(b.rssBytes),
    heapTotalMiB: mib(b.heapTotalBytes ?? 0),
    heapUsedMiB: mib(b.heapUsedBytes ?? 0),
    externalMiB: mib(b.externalBytes ?? 0),
    arrayBuffersMiB: mib(b.arrayBuffersBytes ?? 0),
    heapSpacesMiB: Object.fromEntries(
      Object.entries(b.heapSpacesCommittedBytes ?? {}).map(([k, v]) => [k, mib(v)]),
    ),
  };
}

/** Requests between two stats, by "verb resource". */
export function requestDelta(a: ProbeStats, b: ProbeStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.requestsBy)) {
    const d = v - (a.requestsBy[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

export const isLease = (key: string) => key.endsWith(" leases");
export const isEvent = (key: string) => key.endsWith(" events");
export const isListOrWatch = (key: string) => key.startsWith("list ") || key.startsWith("watch ");
export const sum = (o: Record<string, number>, f: (k: string) => boolean = () => true) =>
  Object.entries(o).reduce((n, [k, v]) => (f(k) ? n + v : n), 0);

/**
 * The controller container's NODE_OPTIONS as deploy/base/controller-deployment.yaml sets them (its
 * runtime flags, e.g. the young generation's size), so the bench measures the process that ships.
 */
export function deploymentNodeOptions(): string {
  const doc = parseYaml(readFileSync(join(ROOT, "deploy/base/controller-deployment.yaml"), "utf8")) as {
    spec: {
      template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } };
    };
  };
  const c = doc.spec.template.spec.containers.find((x) => x.name === "controller");
  return c?.env?.find((e) => e.name === "NODE_OPTIONS")?.value ?? "";
}

/**
 * `node --enable-source-maps dist/src/controller/main.js` (the Dockerfile's ENTRYPOINT) with the
 * probe preloaded and the Deployment's NODE_OPTIONS; stdout and stderr go to a log file.
 */
export class ControllerProcess {
  readonly startedAt: number;
  private readonly pending: ((s: ProbeStats) => void)[] = [];
  private exited: Promise<number | null>;

  private constructor(
    readonly child: ChildProcess,
    readonly healthPort: number,
  ) {
    this.startedAt = Date.now();
    child.on("message", (m: { type?: string; stats?: ProbeStats }) => {
      if (m.type === "stats" && m.stats) this.pending.shift()?.(m.stats);
    });
    this.exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  }

  static async start(o: {
    kubeconfig: string;
    server: string;
    namespace: string;
    logFile: string;
    nodeArgs?: string[];
    /** More controller settings (env), e.g. PROVIDER_LEARNING. */
    env?: Record<string, string>;
  }): Promise<ControllerProcess> {
    const healthPort = await freePort();
    const child = spawn(
      process.execPath,
      [...(o.nodeArgs ?? []), "--enable-source-maps", "--import", pathToFileURL(PROBE).href, CONTROLLER_MAIN],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          // BENCH_NODE_OPTIONS (when set) measures other flags against the Deployment's.
          NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? deploymentNodeOptions(),
          NODE_ENV: "production",
          KUBECONFIG: o.kubeconfig,
          NAMESPACE: o.namespace,
          POD_NAME: "bench-controller",
          HEALTH_PORT: String(healthPort),
          HEALTH_HOST: "127.0.0.1",
          BENCH_API_ORIGIN: new URL(o.server).origin,
          ...o.env,
        },
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      },
    );
    const out = createWriteStream(o.logFile);
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
    return new ControllerProcess(child, healthPort);
  }

  /** Resolves with ms since spawn once /readyz answers 200 (leader with synced caches). */
  async ready(timeoutMs: number): Promise<number> {
    let exitCode: number | null | undefined;
    void this.exited.then((c) => {
      exitCode = c;
    });
    await waitUntil(
      "controller /readyz",
      async () => {
        if (exitCode !== undefined) throw new Error(`controller exited (${exitCode}) before it was ready`);
        try {
          return (await fetch(`http://127.0.0.1:${this.healthPort}/readyz`)).status === 200;
        } catch {
          return false;
        }
      },
      timeoutMs,
    );
    return Date.now() - this.startedAt;
  }

  stats(gc = false): Promise<ProbeStats> {
    return new Promise((resolve) => {
      this.pending.push(resolve);
      this.child.send({ type: "stats", gc });
    });
  }

  resetPeaks(): Promise<void> {
    return new Promise((resolve) => {
      const on = (m: { type?: string }) => {
        if (m.type !== "reset-peaks") return;
        this.child.off("message", on);
        resolve();
      };
      this.child.on("message", on);
      this.child.send({ type: "reset-peaks" });
    });
  }

  /** SIGTERM (the controller releases its Lease and exits 0); SIGKILL after 30 s. */
  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
    await this.exited;
    clearTimeout(t);
  }
}

export interface Recipe {
  def: AgentDefinition;
  station: Station;
}

/** An AgentDefinition `def` and a Station whose pods kwok runs for `runTime` and that exit 0. */
export async function setupStation(
  client: KubeClient,
  ns: string,
  o: {
    station: string;
    maxConcurrentRuns: number;
    historyLimit: number;
    runTime: string;
    createDef?: boolean;
  },
): Promise<Recipe> {
  const def = {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "AgentDefinition",
    metadata: { name: "def", namespace: ns },
    spec: { prompt: "Summarise {topic}.", model: "claude-sonnet-4-5", execution: "interactive" },
  } as AgentDefinition;
  const station = {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Station",
    metadata: { name: o.station, namespace: ns },
    spec: {
      agentDefRef: "def",
      deadlineMinutes: 120,
      maxConcurrentRuns: o.maxConcurrentRuns,
      successfulRunsHistoryLimit: o.historyLimit,
      failedRunsHistoryLimit: o.historyLimit,
      template: {
        metadata: {
          annotations: podScriptAnnotations({
            exitCode: 0,
            runTime: o.runTime,
            logs: { agent: "bench run" },
          }),
        },
        spec: { containers: [{ name: "agent", image: "example.test/agent:1" }] },
      },
    },
  } as Station;
  if (o.createDef !== false) await client.create(AGENT_DEFINITIONS, ns, def);
  await client.create(STATIONS, ns, station);
  return { def, station };
}

export async function createNamespace(client: KubeClient, ns: string) {
  await client.request("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } });
}

export const agentObj = (ns: string, name: string, station: string) => ({
  apiVersion: "agents.re-cinq.com/v1beta1",
  kind: "Agent",
  metadata: { name, namespace: ns },
  spec: { stationRef: station, parameters: { topic: "bench" } },
});

/** Runs a watch loop (re-listing after an error) until `signal` aborts. */
export function watchLoop<T extends { metadata?: { resourceVersion?: string } }>(
  client: KubeClient,
  resource: Resource,
  ns: string,
  signal: AbortSignal,
  onObject: (o: T, type: string) => void,
) {
  return (async () => {
    let rv = (await client.list<T>(resource, ns)).resourceVersion;
    while (!signal.aborted) {
      try {
        await client.watch<T>(resource, ns, { resourceVersion: rv, timeoutSeconds: 60, signal }, (e) => {
          if (e.object.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
          onObject(e.object, e.type);
        });
      } catch {
        if (signal.aborted) return;
        rv = (await client.list<T>(resource, ns)).resourceVersion;
      }
    }
  })();
}

/** When each Agent was first seen Running (or later) and terminal. */
export function observeAgents(client: KubeClient, ns: string, signal: AbortSignal) {
  const running = new Map<string, number>();
  const terminal = new Map<string, number>();
  const loop = watchLoop<Agent>(client, AGENTS, ns, signal, (a) => {
    const name = a.metadata?.name ?? "";
    const phase = a.status?.phase;
    const t = Date.now();
    if ((phase === "Running" || phase === "Succeeded" || phase === "Failed") && !running.has(name))
      running.set(name, t);
    if ((phase === "Succeeded" || phase === "Failed") && !terminal.has(name)) terminal.set(name, t);
  });
  return { running, terminal, loop };
}

/** When each Job was first seen (by its name) and first seen Complete or Failed. */
export function observeJobs(client: KubeClient, ns: string, signal: AbortSignal) {
  const seen = new Map<string, number>();
  const finished = new Map<string, number>();
  const loop = watchLoop<V1Job>(client, JOBS, ns, signal, (j, type) => {
    if (type === "BOOKMARK") return;
    const name = j.metadata?.name ?? "";
    const t = Date.now();
    if (!seen.has(name)) seen.set(name, t);
    const done = (j.status?.conditions ?? []).some(
      (c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
    );
    if (done && !finished.has(name)) finished.set(name, t);
  });
  return { seen, finished, loop };
}

export interface Args {
  agents: number;
  scale: boolean;
  scaleAgents: number;
  cpuProf: boolean;
  heapSnapshot: boolean;
  build: boolean;
  idleSeconds: number;
}

export const RESULTS = join(ROOT, "bench/results");

/** Node flags for the controller: a CPU profile and/or a heap snapshot on SIGUSR2, into bench/results. */
export function diagnosticArgs(a: Args): string[] {
  const out: string[] = [];
  if (a.cpuProf) out.push("--cpu-prof", `--cpu-prof-dir=${RESULTS}`);
  if (a.heapSnapshot) out.push("--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${RESULTS}`);
  return out;
}

export function writeResult(name: string, result: unknown): string {
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, name);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

export function printRows(title: string, rows: [string, string, string?][]) {
  console.log(`\n${title}`);
  for (const [k, c, r] of rows) console.log(`${k.padEnd(52)}${c.padStart(14)}${(r ?? "").padStart(14)}`);
}

/**
 * A private local control plane as the benchmark needs it: watch cache on (as in production), the
 * project's CRDs installed, and a client of it with the API server's URL (for the probe's filter).
 * The caller stops the plane.
 */
export async function startBenchPlane(options: Pick<ControlPlaneOptions, "realNode"> = {}): Promise<{
  plane: ControlPlane;
  client: KubeClient;
  server: string;
}> {
  const plane = await startControlPlane({ watchCache: true, ...options });
  try {
    await installCrds(plane.api(), projectCrdFiles());
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfig);
    return {
      plane,
      client: await KubeClient.fromKubeConfig(kc),
      server: kc.getCurrentCluster()?.server ?? "",
    };
  } catch (err) {
    await plane.stop();
    throw err;
  }
}
