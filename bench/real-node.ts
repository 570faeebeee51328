/**
 * `npm run bench -- --real-node [--agents N]` (default 10): a benchmark, not a test. N Agents on the
 * real node (docs/real-node.md: kubelet, containerd, runc; the agent image built from the
 * Dockerfile and a Station image with the real pinned claude preinstalled,
 * deploy/station-image/Dockerfile), created at once against the in-process controller, each run's
 * claude answered by a local Anthropic Messages server on the node's bridge. Per stage, from the
 * Agent's create request: Job created, pod scheduled, init container started and done, agent
 * container started (first seen through watches), the CLI's first model request (the model server's
 * journal, matched to the run by its prompt), the agent's exit (the supervisor's `agent` lifecycle
 * event, by the runtime's log timestamp), the last container's exit (the pod's containerStatuses
 * terminated.finishedAt, whole seconds), the pod's phase Succeeded/Failed and the Job's outcome as
 * the controller reads it (both first seen through watches) and the Agent terminal; and each exit to terminal. Target: the first model
 * request ≤ 5 s p50 after the create. Also the memory of the node's parts (kubelet, containerd, the
 * shims) with the runs' pods up. Prints a table and writes bench/results/<time>-real-node.json.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { parseConfig } from "../src/controller/config.js";
import { AgentController } from "../src/controller/controller.js";
import { ControllerMetrics } from "../src/controller/metrics.js";
import { AGENT_BASE_URL_SETTINGS } from "../src/core/cli/agent-clis.js";
import type { JobObservation } from "../src/core/input.js";
import { jobState } from "../src/core/readback/readback.js";
import { jobNameFor } from "../src/core/run-job/names.js";
import type { Agent } from "../src/core/types.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, PODS, SECRETS, STATIONS } from "../src/kube/resources.js";
import { agentSecretsReader, SinkDispatcher } from "../src/sinks/index.js";
import { startAnthropicMessages } from "../test/fakes/models/anthropic-messages.js";
import { buildImages } from "../test/harness/images.js";
import { MACHINE, REAL_NODE_SCHEDULING, realNodeProblem } from "../test/harness/real-node/index.js";
import { buildStationImages } from "../test/harness/station-images.js";
import {
  agentObj,
  createNamespace,
  load,
  log,
  mib,
  observeAgents,
  observeJobs,
  printRows,
  startBenchPlane,
  waitUntil,
  watchLoop,
  writeResult,
} from "./lib.js";
import {
  agentExitFromLog,
  exitToTerminal,
  lastContainerExit,
  memoryPerPod,
  type NodeMemory,
  type RunStages,
  STAGES,
  type Stage,
  stageShares,
  stageTimes,
} from "./real-node-report.js";

const NS = "bench-real-node";

function agentsArg(argv: string[]): number {
  const i = argv.indexOf("--agents");
  if (i < 0) return 10;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--agents must be a positive integer, got: "${argv[i + 1]}"`);
  return n;
}

/** RSS in bytes of each process whose command line matches, summed, and how many there were. */
function rss(match: (cmdline: string) => boolean): { bytes: number; count: number } {
  let bytes = 0;
  let count = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (!match(cmd)) continue;
      const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      bytes += Number(kb ?? 0) * 1024;
      count++;
    } catch {}
  }
  return { bytes, count };
}

export async function realNodeBench(argv: string[]): Promise<void> {
  const problem = realNodeProblem();
  if (problem !== "") throw new Error(`--real-node: this machine cannot run the real node: ${problem}`);
  const n = agentsArg(argv);
  log(`starting a control plane with the real node; N = ${n}; load ${load().join(" ")}`);
  const { plane, client } = await startBenchPlane({ realNode: { images: ["agent"] } });
  const abort = new AbortController();
  let controller: AgentController | undefined;
  const model = await startAnthropicMessages(MACHINE.gateway);
  try {
    const node = plane.realNode;
    if (!node) throw new Error("the plane started without its real node");
    const manifest = await buildImages(["agent"], log);
    const { realClis } = await buildStationImages(manifest, ["realClis"], log);
    if (!realClis) throw new Error("no Station image with the real CLIs");
    await node.importImage(realClis, log);
    const agentImage = node.state.images.agent?.name ?? "";

    await createNamespace(client, NS);
    await client.create(SECRETS, NS, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "agent-secrets" },
      stringData: { ANTHROPIC_API_KEY: "sk-ant-bench" },
    });
    await client.create(AGENT_DEFINITIONS, NS, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "AgentDefinition",
      metadata: { name: "bench" },
      spec: {
        prompt: "Answer for {topic}.",
        execution: "interactive",
        model: "claude-sonnet-4-6",
        resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "ANTHROPIC_API_KEY" }] },
      },
    });
    await client.create(STATIONS, NS, {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "Station",
      metadata: { name: "bench" },
      spec: {
        agentDefRef: "bench",
        deadlineMinutes: 10,
        maxConcurrentRuns: n,
        template: {
          spec: { ...REAL_NODE_SCHEDULING, containers: [{ name: "agent", image: realClis.name }] },
        },
      },
    });
    const sinks = new SinkDispatcher({
      readSecretKey: agentSecretsReader((ns, name) => client.get(SECRETS, ns, name)),
      log: { warn: () => {}, error: () => {}, info: () => {} },
    });
    controller = new AgentController({
      config: parseConfig(
        {
          NAMESPACE: NS,
          POD_NAME: "bench-real-node",
          AGENT_IMAGE: agentImage,
          [AGENT_BASE_URL_SETTINGS.anthropic.setting]: model.origin,
        },
        {},
      ),
      client,
      metrics: new ControllerMetrics(),
      sinks,
      log: () => {},
    });
    await controller.start();

    // What the watches see, per Agent, at the time they see it.
    const agents = observeAgents(client, NS, abort.signal);
    const jobs = observeJobs(client, NS, abort.signal);
    const pods = new Map<string, Partial<Record<Stage, number>>>();
    const agentLogs = new Map<string, Promise<number | undefined>>();
    const podLoop = watchLoop<V1Pod>(client, PODS, NS, abort.signal, (p) => {
      const agent = p.metadata?.labels?.["agents.re-cinq.com/agent"];
      if (!agent) return;
      const seen = pods.get(agent) ?? {};
      const t = Date.now();
      const init = p.status?.initContainerStatuses?.find((c) => c.name === "init")?.state;
      const main = p.status?.containerStatuses?.find((c) => c.name === "agent")?.state;
      if (p.spec?.nodeName) seen["pod scheduled"] ??= t;
      if (init?.running || init?.terminated) seen["init started"] ??= t;
      if (init?.terminated) seen["init done"] ??= t;
      if (main?.running || main?.terminated) seen["agent started"] ??= t;
      if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") seen["pod ended"] ??= t;
      const last = lastContainerExit(p.status?.containerStatuses);
      if (last !== undefined) seen["last container exited"] ??= last;
      pods.set(agent, seen);
      // The supervisor's own account of the CLI's end, read once the agent container ended (the
      // pod may be gone by the time the Agent is terminal).
      const pod = p.metadata?.name;
      if (main?.terminated && pod && !agentLogs.has(agent))
        agentLogs.set(
          agent,
          client.readLog(NS, pod, "agent", { timestamps: true }).then(
            (text) => (text === undefined ? undefined : agentExitFromLog(text)),
            () => undefined,
          ),
        );
    });
    // When a watch first saw each Job's outcome as the controller reads it (jobState: the Job
    // controller's interim or final condition, else its counters).
    const jobOutcomes = new Map<string, number>();
    const jobLoop = watchLoop<V1Job>(client, JOBS, NS, abort.signal, (j, type) => {
      const name = j.metadata?.name ?? "";
      if (type === "BOOKMARK" || jobOutcomes.has(name)) return;
      if (jobState({ found: true, status: j.status } as JobObservation).state !== "running")
        jobOutcomes.set(name, Date.now());
    });
    // How each Agent ended, as the watch saw it (the phase, and the message of a failure).
    const ended = new Map<string, string>();
    const endLoop = watchLoop<Agent>(client, AGENTS, NS, abort.signal, (a) => {
      const phase = a.status?.phase;
      if (phase === "Succeeded" || phase === "Failed")
        ended.set(
          a.metadata?.name ?? "",
          phase === "Succeeded"
            ? phase
            : `${phase}: ${(a.status?.conditions ?? []).map((c) => `${c.type} ${c.reason ?? ""} ${c.message ?? ""}`).join("; ")}`,
        );
    });
    await new Promise((r) => setTimeout(r, 1000));

    const shimsOfNode = (c: string) =>
      c.includes("containerd-shim-runc-v2") && c.includes(node.state.containerdSocket.replace(/\.sock$/, ""));
    const nodeMemory = (): NodeMemory => {
      const shims = rss(shimsOfNode);
      return {
        kubelet: rss((c) => c.includes(`--hostname-override=${MACHINE.nodeName}`)).bytes,
        containerd: rss((c) => c.startsWith("containerd ") && c.includes(node.state.dir)).bytes,
        shims: shims.bytes,
        shimCount: shims.count,
      };
    };
    // The node with no run pod: what each pod adds is measured from here.
    const idle = nodeMemory();

    const names = Array.from({ length: n }, (_, i) => `rn-${i}`);
    const created = new Map<string, number>();
    const loadStart = load();
    log(`creating ${n} Agents at once`);
    await Promise.all(
      names.map(async (name) => {
        const body = agentObj(NS, name, "bench");
        body.spec = { ...body.spec, parameters: { topic: `bench run ${name}` } };
        created.set(name, Date.now());
        await client.create(AGENTS, NS, body);
      }),
    );
    let memory: (NodeMemory & { podsUp: number }) | undefined;
    await waitUntil(
      `${n} Agents terminal`,
      () => {
        // Run pods whose sandbox is up: their init started, the Agent not yet terminal.
        const podsUp = names.filter((x) => pods.get(x)?.["init started"] && !agents.terminal.has(x)).length;
        if (!memory || podsUp > memory.podsUp) memory = { ...nodeMemory(), podsUp };
        return agents.terminal.size >= n;
      },
      600_000,
    );
    // Numbers from failed runs would flatter or blame the wrong stage: say how each run ended.
    const failed = names
      .map((name): [string, string] => [name, ended.get(name) ?? "never seen terminal"])
      .filter(([, how]) => how !== "Succeeded");
    for (const [name, how] of failed) log(`Agent ${name} did not succeed: ${how}`);

    const firstRequest = new Map<string, number>();
    for (const entry of model.journal()) {
      const body = JSON.stringify(entry.body ?? "");
      const name = names.find((x) => body.includes(`bench run ${x}.`) || body.includes(`bench run ${x}\\`));
      if (name && !firstRequest.has(name) && entry.path.endsWith("/messages"))
        firstRequest.set(name, entry.at);
    }
    const agentExits = new Map<string, number | undefined>();
    for (const [name, exit] of agentLogs) agentExits.set(name, await exit);
    const runs: RunStages[] = names.map((name) => {
      const t0 = created.get(name) ?? 0;
      const job = jobs.seen.get(jobNameFor(name));
      const at: Partial<Record<Stage, number>> = {
        ...pods.get(name),
        "job created": job,
        "first model request": firstRequest.get(name),
        "agent exited": agentExits.get(name),
        "job outcome": jobOutcomes.get(jobNameFor(name)),
        terminal: agents.terminal.get(name),
      };
      const out: RunStages = {};
      for (const stage of STAGES) {
        const t = at[stage];
        if (t !== undefined) out[stage] = (t - t0) / 1000;
      }
      return out;
    });
    const result = stageTimes(runs);
    const shares = stageShares(runs);
    const f = (x: number) => x.toFixed(2);
    const rows: [string, string, string?][] = STAGES.map((stage) => [
      `${stage} (s after create; ${result[stage].n}/${n})`,
      `p50 ${f(result[stage].p50)}`,
      `p90 ${f(result[stage].p90)}`,
    ]);
    printRows(
      `Real node: ${n} Agents created at once (real claude, local model server); ${n - failed.length} Succeeded`,
      rows,
    );
    printRows(
      "Where the time goes (s from the stage before, per run; pod stages as a watch saw them)",
      STAGES.map((stage) => [
        `${shares[stage].after} → ${stage} (${shares[stage].n} runs)`,
        `p50 ${f(shares[stage].p50)}`,
        `p90 ${f(shares[stage].p90)}`,
      ]),
    );
    const exits = exitToTerminal(runs);
    printRows(
      "From the exit to the Agent terminal (s per run; the last container's exit has whole seconds)",
      (["agent exited", "last container exited"] as const).map((stage) => [
        `${stage} → terminal (${exits[stage].n} runs)`,
        `p50 ${f(exits[stage].p50)}`,
        `p90 ${f(exits[stage].p90)}`,
      ]),
    );
    const m = memory ?? { ...idle, podsUp: 0 };
    const per = memoryPerPod(idle, m, m.podsUp);
    printRows(`Node memory (RSS, MiB): idle, and with the most run pods up (${m.podsUp})`, [
      ["kubelet", String(mib(idle.kubelet)), String(mib(m.kubelet))],
      ["containerd", String(mib(idle.containerd)), String(mib(m.containerd))],
      [`shims (${idle.shimCount}, then ${m.shimCount})`, String(mib(idle.shims)), String(mib(m.shims))],
    ]);
    if (per)
      printRows("Per run pod (MiB): growth from idle / pods up", [
        ["kubelet", String(mib(per.kubelet))],
        ["containerd", String(mib(per.containerd))],
        ["shim", String(mib(per.shim))],
        ["node parts together", String(mib(per.total))],
      ]);
    const target = result["first model request"]?.p50 ?? Number.POSITIVE_INFINITY;
    console.log(
      `\nfirst model request p50 ${target.toFixed(2)} s (target ≤ 5 s): ${target <= 5 ? "met" : "missed"}`,
    );
    const file = writeResult(`${new Date().toISOString().replaceAll(":", "-")}-real-node.json`, {
      n,
      load: { start: loadStart, end: load() },
      stages: result,
      shares,
      exitToTerminal: exits,
      succeeded: n - failed.length,
      failed: Object.fromEntries(failed),
      memory: {
        podsUp: m.podsUp,
        idle: {
          kubeletMiB: mib(idle.kubelet),
          containerdMiB: mib(idle.containerd),
          shimsMiB: mib(idle.shims),
        },
        kubeletMiB: mib(m.kubelet),
        containerdMiB: mib(m.containerd),
        shimsMiB: mib(m.shims),
        shims: m.shimCount,
        perPodMiB: per
          ? {
              kubelet: mib(per.kubelet),
              containerd: mib(per.containerd),
              shim: mib(per.shim),
              total: mib(per.total),
            }
          : undefined,
      },
    });
    log(`wrote ${file}`);
    await Promise.race([podLoop, endLoop, jobLoop, new Promise((r) => setTimeout(r, 0))]);
  } finally {
    abort.abort();
    await controller?.stop();
    await model.close();
    await client.close();
    await plane.stop();
  }
}
