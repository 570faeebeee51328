/**
 * `npm run bench -- --prompt-api [--prompts N] [--starts M]`: a benchmark, not a test (docs/prompt-api.md#added-latency-measured).
 *
 * - **Cold start**: the run pod's supervisor as the Job runs it (`dist/agent/ai-agent-supervisor --
 *   <initial prompt>`, the env the Job builder gives the `agent` container, a fake `claude` on
 *   PATH that answers at once), timed from spawn to the first 200 of `GET /healthz` (the readiness
 *   probe), M times (default 10), with the CPU it used by then (/proc/<pid>/stat).
 * - **Added latency**: on a private local control plane, a realtime Agent Running with its Job,
 *   and the Job's pod made Ready by kwok; the controller's prompt API served by
 *   startControllerPromptApi on 127.0.0.1 with a KubeClient built as the controller builds it, so
 *   the Agent, Job and pods are read from the real API server on every prompt. kwok's pod IP leads
 *   nowhere, so `forward` sends the request to the one supervisor on loopback that plays that pod
 *   (only the address changes; the request is undici's, as in production). N prompts (default 200)
 *   go straight to the supervisor's /v1/prompt and N through the API, alternating which comes
 *   first, each after the previous turn ended (its `turn` lifecycle event on the supervisor's
 *   stdout), so the queue is empty and no CLI is running when a sample is taken.
 *
 * Prints a table and writes bench/results/<time>-prompt-api.json (gitignored). Needs
 * `npm run build:agent` (dist/agent/ai-agent) to have run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { startControllerPromptApi } from "../src/controller/prompt-api-wiring.js";
import { buildJob } from "../src/core/run-job/job.js";
import type { Agent, AgentDefinition } from "../src/core/types.js";
import { KubeClient } from "../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, PODS } from "../src/kube/resources.js";
import { type Forward, runPodStateFrom, runToken, undiciForward } from "../src/prompt-api/index.js";
import { installCrds, startControlPlane } from "../test/harness/cluster.js";
import { projectCrdFiles } from "../test/harness/global-setup.js";
import { freePort } from "../test/harness/ports.js";
import {
  createNamespace,
  load,
  log,
  pct,
  printRows,
  ROOT,
  setupStation,
  waitUntil,
  writeResult,
} from "./lib.js";

const SUPERVISOR = join(ROOT, "dist/agent/ai-agent-supervisor");
const NS = "bench-prompt";
const API_TOKEN = "bench-api-token";
const SIGNING_KEY = "bench-signing-key";

/** A `claude` that answers every turn at once: its init line (the session id) and a result. */
const FAKE_CLAUDE = `#!/bin/sh
id=none
while [ $# -gt 1 ]; do case "$1" in --session-id|--resume) id="$2";; esac; shift; done
printf '{"type":"system","subtype":"init","session_id":"%s"}\\n{"type":"result","is_error":false,"result":"ok","session_id":"%s"}\\n' "$id" "$id"
`;

function intFlag(argv: string[], flag: string, fallback: number): number {
  const i = argv.indexOf(flag);
  if (i < 0) return fallback;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${flag} must be a positive integer, got: "${argv[i + 1]}"`);
  return n;
}

const stats = (xs: number[]) => ({
  p50: round(pct(xs, 50)),
  p99: round(pct(xs, 99)),
  min: round(Math.min(...xs)),
  max: round(Math.max(...xs)),
  mean: round(xs.reduce((a, b) => a + b, 0) / xs.length),
});
const round = (x: number) => Number(x.toFixed(2));

/** CPU ms (user + system) a live process has used, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function procStatusKiB(pid: number, key: string): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${key}:`));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN);
}

function healthz(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === 200));
    });
    req.on("error", () => resolve(false));
  });
}

/** One supervisor process, its stdout lifecycle events followed (turn ends by turn number). */
class Supervisor {
  readonly turnEnded = new Map<number, string>();
  startedLineMs?: number;
  stderr = "";
  readonly exited: Promise<number | null>;
  private waiters: (() => void)[] = [];

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly spawnedAt: number,
  ) {
    let buf = "";
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        this.line(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf("\n");
      }
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  }

  static async start(env: Record<string, string>, argv: string[]): Promise<Supervisor> {
    const port = await freePort();
    const spawnedAt = performance.now();
    const child = spawn(SUPERVISOR, argv, {
      env: { ...env, AGENT_REALTIME_LISTEN: `127.0.0.1:${port}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new Supervisor(child, port, spawnedAt);
  }

  private line(text: string) {
    let e: { kind?: string; phase?: string; status?: string; turn?: number };
    try {
      e = JSON.parse(text);
    } catch {
      return;
    }
    if (e.kind !== "lifecycle") return;
    if (e.phase === "agent" && e.status === "started")
      this.startedLineMs = performance.now() - this.spawnedAt;
    if (e.phase === "turn" && typeof e.turn === "number" && e.status !== "started") {
      this.turnEnded.set(e.turn, e.status ?? "");
      for (const w of this.waiters.splice(0)) w();
    }
  }

  /** Resolves once turn `n` has ended (succeeded or failed); rejects after `timeoutMs`. */
  async turnDone(n: number, timeoutMs = 30_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    while (!this.turnEnded.has(n)) {
      if (Date.now() > end) throw new Error(`turn ${n} did not end; stderr: ${this.stderr}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 500);
      });
    }
    return this.turnEnded.get(n) as string;
  }

  /** Polls /healthz every 5 ms; resolves with ms from spawn to the first 200. */
  async serving(timeoutMs = 60_000): Promise<number> {
    let code: number | null | undefined;
    void this.exited.then((c) => {
      code = c;
    });
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (code !== undefined) throw new Error(`supervisor exited (${code}) before serving: ${this.stderr}`);
      if (await healthz(this.port)) return performance.now() - this.spawnedAt;
      if (Date.now() > end) throw new Error(`supervisor not serving after ${timeoutMs} ms: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<number | null> {
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await this.exited;
    clearTimeout(t);
    return code;
  }
}

/** POSTs a prompt; resolves with the round trip in ms and the reply's turn. */
async function prompt(url: string, token: string, text: string): Promise<{ ms: number; turn: number }> {
  const t0 = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ prompt: text }),
  });
  const body = (await res.json()) as { turn?: number; error?: string };
  const ms = performance.now() - t0;
  if (res.status !== 202 || typeof body.turn !== "number")
    throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
  return { ms, turn: body.turn };
}

export async function promptLatency(argv: string[]): Promise<void> {
  const n = intFlag(argv, "--prompts", 200);
  const starts = intFlag(argv, "--starts", 10);
  if (!existsSync(SUPERVISOR)) throw new Error(`${SUPERVISOR} is missing: run npm run build:agent first`);
  const at = new Date().toISOString();
  const loads: Record<string, number[]> = { start: load() };
  const dir = mkdtempSync(join(tmpdir(), "bench-prompt-"));
  const bin = join(dir, "bin");
  for (const d of [bin, join(dir, "home"), join(dir, "workspace")]) mkdirSync(d);
  writeFileSync(join(bin, "claude"), FAKE_CLAUDE);
  chmodSync(join(bin, "claude"), 0o755);

  log(
    `starting control plane (watch cache on); prompts ${n} per path, ${starts} cold starts; load ${loads.start}`,
  );
  const plane = await startControlPlane({ watchCache: true }).catch((err) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const supervisors: Supervisor[] = [];
  let api: Awaited<ReturnType<typeof startControllerPromptApi>> | undefined;
  const clients: KubeClient[] = [];
  try {
    await installCrds(plane.api(), projectCrdFiles());
    // The controller's own client: KUBECONFIG read by kube/access.ts, as `npm run controller` does.
    process.env.KUBECONFIG = plane.kubeconfig;
    const client = await KubeClient.fromEnvironment();
    const apiClient = await KubeClient.fromEnvironment();
    clients.push(client, apiClient);

    // A realtime definition, a Station whose pods kwok keeps Running (and Ready) for an hour.
    await createNamespace(client, NS);
    const { station } = await setupStation(client, NS, {
      station: "rt",
      maxConcurrentRuns: 1,
      historyLimit: 1,
      runTime: "1h",
      createDef: false,
    });
    const def = {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "AgentDefinition",
      metadata: { name: "def", namespace: NS },
      spec: { prompt: "Summarise {topic}.", model: "claude-sonnet-4-5", execution: "realtime" },
    } as AgentDefinition;
    await client.create(AGENT_DEFINITIONS, NS, def);
    const created = await client.create(AGENTS, NS, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Agent",
      metadata: { name: "session", namespace: NS },
      spec: { stationRef: "rt", parameters: { topic: "bench" } },
    });
    const agent = created.object as unknown as Agent;
    const built = buildJob(
      agent,
      station,
      def,
      {
        namespace: NS,
        agentImage: "example.test/init:1",
        maxOutputBytes: 262144,
        batchEnabled: false,
        realtimeEnabled: true,
        batchPollSeconds: 60,
        realtimeSigningKey: SIGNING_KEY,
      },
      "realtime",
    );
    if (!built.ok) throw new Error(`job builder refused: ${built.reason}`);
    const job = built.job as V1Job;
    await client.create<V1Job>(JOBS, NS, job);
    const jobName = job.metadata?.name ?? "";
    const patched = await client.patchStatus(AGENTS, NS, "session", agent.metadata.resourceVersion ?? "", {
      phase: "Running",
      jobName,
      startedAt: new Date().toISOString(),
    });
    if (patched === "conflict") throw new Error("the Running patch conflicted");

    // The supervisor's env and argv as the Job gives them to the `agent` container; only the
    // paths (HOME, WORKSPACE_DIR, PATH), the fieldRefs and the listen address are local.
    const container = job.spec?.template.spec?.containers.find((c) => c.name === "agent");
    const env: Record<string, string> = {};
    for (const e of container?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    Object.assign(env, {
      HOME: join(dir, "home"),
      WORKSPACE_DIR: join(dir, "workspace"),
      PATH: `${bin}:/usr/bin:/bin`,
      POD_NAME: `${jobName}-bench`,
      POD_NAMESPACE: NS,
    });
    const command = container?.command ?? [];
    const supervisorArgv = command.slice(command.indexOf("--"));

    // 1. Cold start: spawn → first 200 of /healthz, then SIGTERM (an idle session exits 0).
    loads.coldStart = load();
    const cold: { healthzMs: number; startedLineMs: number; cpuMs: number; exit: number | null }[] = [];
    for (let i = 0; i < starts; i++) {
      const s = await Supervisor.start(env, supervisorArgv);
      supervisors.push(s);
      const healthzMs = await s.serving();
      const cpu = cpuMs(s.child.pid as number);
      await s.turnDone(1);
      const exit = await s.stop();
      supervisors.pop();
      cold.push({ healthzMs, startedLineMs: s.startedLineMs ?? Number.NaN, cpuMs: cpu, exit });
      log(
        `cold start ${i + 1}/${starts}: ${healthzMs.toFixed(0)} ms to /healthz 200, ${cpu} ms CPU, exit ${exit}`,
      );
    }

    // 2. The serving session, and the prompt API in front of it.
    const sup = await Supervisor.start(env, supervisorArgv);
    supervisors.push(sup);
    await sup.serving();
    await sup.turnDone(1);
    const token = runToken(SIGNING_KEY, agent.metadata.uid ?? "");
    const podUrls = new Set<string>();
    const redirect: Forward = (req) => {
      const u = new URL(req.url);
      podUrls.add(u.origin);
      return undiciForward({ ...req, url: `http://127.0.0.1:${sup.port}${u.pathname}` });
    };
    const warnings: string[] = [];
    // The API's Kubernetes reads, timed: the span from the first lookup's start to the last one's
    // end within one proxied prompt (the Agent GET, then the Job GET and pod LIST in parallel).
    const span = { first: Number.POSITIVE_INFINITY, last: 0 };
    const track = <T>(p: Promise<T>): Promise<T> => {
      span.first = Math.min(span.first, performance.now());
      return p.finally(() => {
        span.last = Math.max(span.last, performance.now());
      });
    };
    const k = apiClient;
    const timedClient: Pick<KubeClient, "get" | "list" | "patchStatus"> = {
      get: ((...x: Parameters<KubeClient["get"]>) => track(k.get(...x))) as KubeClient["get"],
      list: ((...x: Parameters<KubeClient["list"]>) => track(k.list(...x))) as KubeClient["list"],
      patchStatus: ((...x: Parameters<KubeClient["patchStatus"]>) =>
        track(k.patchStatus(...x))) as KubeClient["patchStatus"],
    };
    api = await startControllerPromptApi({
      config: { namespace: NS, realtimeApiToken: API_TOKEN, realtimeSigningKey: SIGNING_KEY },
      client: timedClient,
      forward: redirect,
      port: 0,
      host: "127.0.0.1",
      logger: {
        info() {},
        warn: (m: string) => warnings.push(m),
        error: (m: string) => warnings.push(m),
      },
    });
    log("waiting for kwok to make the run pod Ready with an IP");
    await waitUntil(
      "the run pod serving",
      async () => {
        const [j, pods] = await Promise.all([
          client.get<V1Job>(JOBS, NS, jobName),
          client.list<V1Pod>(PODS, NS, { labelSelector: `job-name=${jobName}` }),
        ]);
        return runPodStateFrom({ job: j, pods: pods.items }).kind === "serving";
      },
      120_000,
    );
    const direct = `http://127.0.0.1:${sup.port}/v1/prompt`;
    const proxied = `http://127.0.0.1:${api.port}/v1/namespaces/${NS}/agents/session/prompt`;
    const kubeSpanMs: number[] = [];
    const send = async (path: "direct" | "api", i: number) => {
      span.first = Number.POSITIVE_INFINITY;
      span.last = 0;
      const r =
        path === "direct"
          ? await prompt(direct, token, `direct ${i}`)
          : await prompt(proxied, API_TOKEN, `through the API ${i}`);
      const outcome = await sup.turnDone(r.turn);
      if (outcome !== "succeeded") throw new Error(`turn ${r.turn} ${outcome}`);
      if (path === "api") kubeSpanMs.push(span.last - span.first);
      return r.ms;
    };

    // Warm-up: connections opened, JIT warm, status.sessionId recorded by the first API prompt.
    for (let i = 0; i < 10; i++) await send(i % 2 ? "direct" : "api", -i);
    loads.prompts = load();
    log(`${n} prompts per path, alternating`);
    const directMs: number[] = [];
    const apiMs: number[] = [];
    const diffMs: number[] = [];
    const requests0 = apiClient.requestCount;
    kubeSpanMs.length = 0;
    for (let i = 0; i < n; i++) {
      let d: number;
      let a: number;
      if (i % 2 === 0) {
        d = await send("direct", i);
        a = await send("api", i);
      } else {
        a = await send("api", i);
        d = await send("direct", i);
      }
      directMs.push(d);
      apiMs.push(a);
      diffMs.push(a - d);
    }
    const apiRequestsPerPrompt = (apiClient.requestCount - requests0) / n;
    const supPid = sup.child.pid as number;
    const supervisorRssMiB = round(procStatusKiB(supPid, "VmRSS") / 1024);
    const supervisorPeakRssMiB = round(procStatusKiB(supPid, "VmHWM") / 1024);
    loads.end = load();

    const exeBytes = statSync(SUPERVISOR).size;
    const d = stats(directMs);
    const a = stats(apiMs);
    const diff = stats(diffMs);
    const ch = stats(cold.map((c) => c.healthzMs));
    const cs = stats(cold.map((c) => c.startedLineMs));
    const cc = stats(cold.map((c) => c.cpuMs));
    const ks = stats(kubeSpanMs);
    const result = {
      mode: "prompt-api",
      at,
      load: loads,
      node: process.version,
      coldStart: {
        executable: "dist/agent/ai-agent-supervisor",
        executableBytes: exeBytes,
        starts,
        spawnToHealthzMs: ch,
        spawnToAgentStartedLineMs: cs,
        cpuMsAtHealthz: cc,
        runs: cold,
      },
      latency: {
        prompts: n,
        directMs: d,
        throughApiMs: a,
        addedMs: { ...diff, p50OfApiMinusP50OfDirect: round(a.p50 - d.p50) },
        apiRequestsPerPrompt,
        kubernetesLookupsMs: ks,
        podAddresses: [...podUrls],
        warnings,
        supervisorRssMiB,
        supervisorPeakRssMiB,
      },
      notes:
        "cold start: spawn of the SEA executable with the Job's env until the first 200 of GET /healthz (polled every 5 ms), CPU from /proc at that moment (10 ms ticks); latency: client round trip of POST /v1/prompt → 202, each sample taken with an empty queue and no turn running; addedMs are per-pair differences (API sample minus the direct one next to it); kubernetesLookupsMs: from the start of the Agent GET to the end of the last of the Job GET and pod LIST within one proxied prompt",
    };
    const f = (s: { p50: number; p99: number }) => `${s.p50.toFixed(1)}/${s.p99.toFixed(1)}`;
    printRows(
      `prompt API: ${n} prompts per path; load (1/5/15 min) at start ${loads.start}, end ${loads.end}`,
      [
        ["figure (ms)", "p50/p99", "min/max"],
        ["direct to the supervisor (POST /v1/prompt → 202)", f(d), `${d.min.toFixed(1)}/${d.max.toFixed(1)}`],
        ["through the prompt API (→ 202)", f(a), `${a.min.toFixed(1)}/${a.max.toFixed(1)}`],
        ["added by the API (pairwise difference)", f(diff), `${diff.min.toFixed(1)}/${diff.max.toFixed(1)}`],
        ["of which the Kubernetes lookups (span)", f(ks), `${ks.min.toFixed(1)}/${ks.max.toFixed(1)}`],
        ["API requests per proxied prompt", apiRequestsPerPrompt.toFixed(2)],
        ["supervisor RSS / peak RSS (MiB)", `${supervisorRssMiB}/${supervisorPeakRssMiB}`],
      ],
    );
    printRows(`supervisor cold start: ${starts} starts; executable ${(exeBytes / 1e6).toFixed(1)} MB`, [
      ["figure (ms)", "p50", "min/max"],
      ["spawn → first 200 of /healthz", ch.p50.toFixed(0), `${ch.min.toFixed(0)}/${ch.max.toFixed(0)}`],
      ["spawn → agent/started line", cs.p50.toFixed(0), `${cs.min.toFixed(0)}/${cs.max.toFixed(0)}`],
      ["CPU used by then (user + system)", cc.p50.toFixed(0), `${cc.min.toFixed(0)}/${cc.max.toFixed(0)}`],
    ]);
    console.log(`\nwrote ${writeResult(`${at.replace(/[:.]/g, "-")}-prompt-api.json`, result)}`);
  } finally {
    await api?.close(1000);
    for (const s of supervisors) await s.stop();
    for (const c of clients) await c.close();
    await plane.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
