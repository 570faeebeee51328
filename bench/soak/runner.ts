/**
 * The soak's runner (docs/soak.md): the targets it runs against (this machine's plane with the
 * system installed from deploy/, or another cluster), and the run itself: the Agents, the faults,
 * the checks and the report. bench/soak/run.ts is its command.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient } from "../../src/kube/client.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, LEASES, PODS, STATIONS } from "../../src/kube/resources.js";
import { startFakeAnthropic } from "../../test/fakes/providers/anthropic.js";
import { startFakeGemini } from "../../test/fakes/providers/gemini.js";
import { startFakeOpenAI } from "../../test/fakes/providers/openai.js";
import {
  type ControlPlane,
  compactEtcd,
  restartApiServer,
  startControlPlane,
} from "../../test/harness/cluster.js";
import { buildImages } from "../../test/harness/images.js";
import { MACHINE, realNodeProblem, restartKubelet } from "../../test/harness/real-node/index.js";
import { buildStationImages } from "../../test/harness/station-images.js";
import { installSystem, kubectlWith, NS } from "../../test/own-node/install-support.js";
import { writeResult } from "../lib.js";
import type { SoakArgs } from "./args.js";
import {
  type AgentSnap,
  batchesTwice,
  type ConcurrencyPolicy,
  type Execution,
  isTerminal,
  lostAgents,
  overConcurrency,
  type ProviderBatch,
  type Snapshot,
  type StuckBounds,
  statusFingerprint,
  stuckAgents,
  terminalDisagreements,
  twoJobs,
  ViolationLog,
} from "./invariants.js";
import {
  agentObject,
  BATCH_TIMEOUT_MINUTES,
  DEADLINE_MINUTES,
  drawMix,
  MIX_PARTS,
  type MixEntry,
  type MixPart,
  mixObjects,
} from "./mix.js";
import { providerRule } from "./provider-faults.js";
import { buildReport, type Injection, type LogLine, parseTimestampedLog, table } from "./report.js";
import { drawSchedule, FAULT_KINDS, type Fault, type FaultKind, formatSchedule } from "./schedule.js";

const run = promisify(execFile);
const log = (m: string) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}] ${m}`);

/** The stuck bounds (docs/soak.md#invariants): the deadline or the batch timeout, plus slack. */
const SLACK_MS = 120_000;
const BOUNDS: StuckBounds = {
  // A batch's submit back-off doubles up to 10 minutes between attempts (docs/batch-runs.md).
  pending: { interactive: 180_000, realtime: 180_000, batch: 10 * 60_000 + SLACK_MS },
  running: {
    interactive: DEADLINE_MINUTES * 60_000 + SLACK_MS,
    realtime: DEADLINE_MINUTES * 60_000 + SLACK_MS,
    batch: BATCH_TIMEOUT_MINUTES * 60_000 + SLACK_MS,
  },
};
const CHECK_EVERY_MS = 3_000;
/** How long a finished Agent stays before the soak deletes it. */
const RETIRE_AFTER_MS = 30_000;
const LOGS_EVERY_MS = 20_000;
/** Virtual provider time per real second: the fakes' batches end in seconds. */
const PROVIDER_SECONDS_PER_SECOND = 10;

/** What the soak runs against: how to reach it, which faults and parts of the mix it offers. */
export interface Target {
  client: KubeClient;
  kinds: FaultKind[];
  parts: MixPart[];
  notYet: string[];
  inject(fault: Fault, picked: { leader: () => Promise<string> }): Promise<string>;
  /** Moves the fake providers' clocks (nothing on another cluster). */
  tick(): void;
  /** Every batch the providers' own journals hold (none on another cluster). */
  batches(): ProviderBatch[];
  stop(): Promise<void>;
}

/** The parts of the issue's mix and faults not built in this slice (docs/soak.md#not-yet). */
const NOT_YET = [
  "mix: real CLI runs, realtime sessions through the prompt API's Service, budgets and provider limits, Station and definition edits",
  "faults: dropped and frozen watches, slow and refused writes, model-server stalls and dropped streams, kwok node loss, clock skew",
  "invariants: batches left running or uncleaned after their Agent, sink events, cost sums, realtime prompts, the controller's memory over time",
];

async function controllerPods(client: KubeClient, ns: string): Promise<string[]> {
  const pods = await client.list<{ metadata: { name: string; deletionTimestamp?: string } }>(PODS, ns, {
    labelSelector: "agents.re-cinq.com/component=controller",
  });
  return pods.items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
}

async function leaderOf(client: KubeClient, ns: string): Promise<string> {
  const lease = await client.get<{ spec?: { holderIdentity?: string } }>(LEASES, ns, "agent-controller");
  const holder = lease?.spec?.holderIdentity ?? "";
  if (holder === "") throw new Error("no Lease holder");
  return holder;
}

async function evict(client: KubeClient, ns: string, pod: string): Promise<string> {
  await client.request("POST", `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, {
    body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: pod, namespace: ns } },
  });
  return `evicted ${pod}`;
}

async function deleteRunPod(client: KubeClient, ns: string, pick: number): Promise<string> {
  const pods = await client.list<{ metadata: { name: string }; status?: { phase?: string } }>(PODS, ns, {
    labelSelector: "agents.re-cinq.com/agent",
  });
  const running = pods.items.filter((p) => p.status?.phase === "Running").map((p) => p.metadata.name);
  if (running.length === 0) throw new Error("no run pod running");
  const pod = running.sort()[pick % running.length] as string;
  await client.delete(PODS, ns, pod);
  return `deleted ${pod}`;
}

/** This machine: the local plane with the real node and the system installed from deploy/. */
async function localTarget(work: string): Promise<Target> {
  const problem = realNodeProblem();
  if (problem !== "") throw new Error(`this machine cannot run the real node: ${problem}`);
  // One real node per machine (docs/real-node.md): wait for another plane's to go.
  while (existsSync(MACHINE.lockFile)) await sleep(1_000);
  const plane: ControlPlane = await startControlPlane({
    realNode: { images: ["agent", "controller"], services: true },
    log,
  });
  const stops: (() => Promise<unknown>)[] = [() => plane.stop()];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch((e) => log(`stopping: ${e}`));
  };
  try {
    const node = plane.realNode;
    if (!node) throw new Error("the plane started without its real node");
    const agentImage = plane.state.realNode?.images.agent?.name ?? "";
    const { fakeClis } = await buildStationImages(await buildImages(["agent"], log), ["fakeClis"], log);
    if (!fakeClis) throw new Error("no Station image with the fake CLIs");
    await node.importImage(fakeClis, log);
    const keys = { anthropic: "sk-ant-soak", gemini: "gemini-soak-key", openai: "sk-openai-soak" };
    const providers = {
      anthropic: await startFakeAnthropic({ apiKey: keys.anthropic, host: MACHINE.gateway }),
      gemini: await startFakeGemini({ apiKey: keys.gemini, host: MACHINE.gateway }),
      openai: await startFakeOpenAI({ apiKey: keys.openai, host: MACHINE.gateway }),
    };
    for (const p of Object.values(providers)) stops.push(() => p.close());
    const api = plane.api();
    log("installing the system: kubectl apply -k of deploy/ through test/install");
    await installSystem({
      kubectl: kubectlWith(() => plane.kubeconfig),
      api,
      kubeconfig: plane.kubeconfig,
      overlayDir: join(work, "overlay"),
      env: {
        ANTHROPIC_BASE_URL: providers.anthropic.url,
        GEMINI_BASE_URL: providers.gemini.url,
        OPENAI_BASE_URL: providers.openai.url,
        BATCH_POLL_SECONDS: "2",
      },
      podCidr: MACHINE.subnet,
      secrets: { "anthropic-key": keys.anthropic, "gemini-key": keys.gemini, "openai-key": keys.openai },
      apiToken: "soak-api-token-0123456789abcdef0123456789",
    });
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfig);
    const client = await KubeClient.fromKubeConfig(kc);
    stops.splice(1, 0, () => client.close());
    const objects = mixObjects(NS, MIX_PARTS, {
      agentImage,
      fakeCliImage: fakeClis.name,
      execImage: agentImage,
      realNode: true,
    });
    await applyObjects(client, NS, objects);
    const containerd = plane.state.realNode?.containerdSocket ?? "";
    return {
      client,
      kinds: [...FAULT_KINDS],
      parts: [...MIX_PARTS],
      notYet: NOT_YET,
      tick: () => {
        for (const p of Object.values(providers)) p.advance(PROVIDER_SECONDS_PER_SECOND * 1_000);
      },
      // Each vendor's batch carries the Agent's uid (docs/batch-providers.md#requests).
      batches: () => [
        ...[...providers.anthropic.batches.values()].map((b) => ({
          provider: "anthropic",
          id: b.id,
          agentUid: b.requests[0]?.custom_id ?? "",
        })),
        ...[...providers.gemini.batches.values()].map((b) => ({
          provider: "gemini",
          id: b.id,
          agentUid: b.displayName,
        })),
        ...[...providers.openai.batches.values()].map((b) => ({
          provider: "openai",
          id: b.id,
          agentUid: b.metadata?.agent_uid ?? "",
        })),
      ],
      stop,
      inject: async (fault, picked) => {
        switch (fault.kind) {
          case "leader-sigkill": {
            const leader = await picked.leader();
            const pid = await controllerPid(client, containerd, leader);
            process.kill(pid, "SIGKILL");
            return `SIGKILL ${leader} (pid ${pid})`;
          }
          case "leader-evict":
            return await evict(client, NS, await picked.leader());
          case "leader-wedge": {
            // The install test's wedged leader: stopped, not killed; liveness restarts the container.
            const leader = await picked.leader();
            const pid = await controllerPid(client, containerd, leader);
            process.kill(pid, "SIGSTOP");
            // Harmless if the kubelet has restarted it meanwhile.
            setTimeout(() => {
              try {
                process.kill(pid, "SIGCONT");
              } catch {}
            }, fault.windowMs).unref();
            return `SIGSTOP ${leader} (pid ${pid})`;
          }
          case "run-pod-delete":
            return await deleteRunPod(client, NS, Number(fault.params.pick));
          case "apiserver-restart":
            await restartApiServer(plane.stateFile);
            return "kube-apiserver (and kwok) restarted";
          case "etcd-compact":
            return `etcd compacted at revision ${await compactEtcd(plane.stateFile)}`;
          case "kubelet-restart":
            await restartKubelet(node, Number(fault.params.downMs));
            return `kubelet restarted after ${fault.params.downMs} ms down`;
          default: {
            const rule = providerRule(fault);
            providers[fault.target as keyof typeof providers].inject(rule);
            const what = rule.kind === "status" ? `answers ${rule.status} to` : `${rule.kind}: `;
            return `${fault.target} ${what} the next ${rule.times} ${fault.params.call} calls`;
          }
        }
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The controller container's host pid, from containerd's task list (as the install test finds it). */
async function controllerPid(client: KubeClient, containerdSocket: string, pod: string): Promise<number> {
  const p = await client.get<{ status?: { containerStatuses?: { containerID?: string }[] } }>(PODS, NS, pod);
  const id = (p?.status?.containerStatuses?.[0]?.containerID ?? "").replace(/^containerd:\/\//, "");
  if (id === "") throw new Error(`${pod} has no running container`);
  const tasks = await run("ctr", ["--address", containerdSocket, "-n", "k8s.io", "tasks", "ls"]);
  const pid = Number(
    tasks.stdout
      .split("\n")
      .find((l) => l.startsWith(id))
      ?.split(/\s+/)[1],
  );
  if (!(pid > 1)) throw new Error(`no task for ${pod}'s container ${id}`);
  return pid;
}

/** Another cluster, the system installed there already (docs/install.md): what the API reaches. */
async function externalTarget(a: SoakArgs): Promise<Target> {
  const kc = new KubeConfig();
  kc.loadFromFile(a.kubeconfig as string);
  const client = await KubeClient.fromKubeConfig(kc);
  const parts: MixPart[] = ["exec"];
  const image = a.execImage as string;
  await applyObjects(
    client,
    a.namespace,
    mixObjects(a.namespace, parts, {
      agentImage: image,
      fakeCliImage: image,
      execImage: image,
      realNode: false,
    }),
  );
  return {
    client,
    kinds: ["leader-evict", "run-pod-delete"],
    parts,
    notYet: [
      ...NOT_YET,
      "on another cluster: exec runs only; no SIGKILL, API-server, etcd, kubelet or provider faults",
    ],
    tick: () => {},
    batches: () => [],
    stop: () => client.close(),
    inject: async (fault, picked) =>
      fault.kind === "leader-evict"
        ? await evict(client, a.namespace, await picked.leader())
        : await deleteRunPod(client, a.namespace, Number(fault.params.pick)),
  };
}

async function applyObjects(client: KubeClient, ns: string, objects: unknown[]): Promise<void> {
  for (const o of objects as { kind: string; metadata: { name: string } }[]) {
    const r = o.kind === "Station" ? STATIONS : AGENT_DEFINITIONS;
    await client.delete(r, ns, o.metadata.name);
    await retry(`create ${o.kind} ${o.metadata.name}`, () => client.create(r, ns, o));
  }
}

async function retry<T>(what: string, f: () => Promise<T>, tries = 20): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (i >= tries) throw new Error(`${what}: ${err}`);
      await sleep(1_000);
    }
  }
}

interface AgentObj {
  metadata: { name: string; uid: string; deletionTimestamp?: string; labels?: Record<string, string> };
  spec: { stationRef: string };
  status?: {
    phase?: string;
    exitCode?: number;
    failureReason?: string;
    batchId?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}
interface StationObj {
  metadata: { name: string };
  spec: { concurrencyPolicy?: ConcurrencyPolicy; maxConcurrentRuns?: number };
}

const executionOf = (part: string | undefined): Execution =>
  part?.startsWith("batch-") ? "batch" : "interactive";

export async function soak(a: SoakArgs): Promise<void> {
  // First, so a run that fails while installing still says how to replay it.
  console.log(`soak: seed ${a.seed}`);
  const work = await mkdtemp(join(tmpdir(), "soak-"));
  const target = a.kubeconfig ? await externalTarget(a) : await localTarget(work);
  try {
    await soakOn(target, a);
  } finally {
    await target.stop();
    await rm(work, { recursive: true, force: true });
  }
}

export async function soakOn(target: Target, a: SoakArgs): Promise<void> {
  const ns = a.kubeconfig ? a.namespace : NS;
  const { client } = target;
  const durationMs = a.durationMs ?? Math.ceil(((a.agents ?? 0) / a.rate) * 60_000);
  const faultCount = a.faults ?? Math.max(1, Math.round(durationMs / 20_000));
  const schedule = drawSchedule({ seed: a.seed, durationMs, count: faultCount, kinds: target.kinds });
  const mix: MixEntry[] = drawMix(
    a.seed,
    a.agents ?? Math.ceil((durationMs / 60_000) * a.rate),
    target.parts,
  );
  console.log(
    `soak: seed ${a.seed}: ${a.agents ? `${a.agents} Agents` : `${durationMs / 1000} s`} at ${a.rate}/min, ${schedule.length} faults of ${target.kinds.join(", ")}`,
  );
  for (const line of formatSchedule(schedule)) console.log(line);

  const loadStart = loadavg();
  const startedAt = Date.now();
  let stopping = false;
  const onSignal = () => {
    log("interrupted: finishing early, the report follows");
    stopping = true;
  };
  process.on("SIGINT", onSignal);
  const created: { name: string; uid: string; createdAt: number }[] = [];
  const deletedBySoak = new Set<string>();
  const seenTerminal = new Set<string>();
  const retired = new Set<string>();
  /** Uids last seen Running on a Replace Station: a new run there deletes the oldest. */
  const replaceable = new Set<string>();
  const toTerminalMs: number[] = [];
  const statusSeen = new Map<string, { status: string; since: number }>();
  const jobsSeen = new Map<string, Set<string>>();
  const violations = new ViolationLog();
  const injections: Injection[] = [];
  const logLines = new Map<string, LogLine>();
  let lastSnapshot: Snapshot | undefined;

  const collectLogs = async () => {
    for (const pod of await controllerPods(client, ns).catch(() => [])) {
      const text = await client.readLog(ns, pod, "controller", { timestamps: true }).catch(() => undefined);
      for (const l of parseTimestampedLog(pod, text ?? "")) logLines.set(`${l.pod} ${l.at} ${l.text}`, l);
    }
  };

  /** One round of the continuous checks: LIST, then the pure invariants over the snapshot. */
  const check = async (): Promise<Snapshot | undefined> => {
    try {
      const [agents, stations, jobs] = await Promise.all([
        client.list<AgentObj>(AGENTS, ns),
        client.list<StationObj>(STATIONS, ns),
        client.list<{ metadata: { name: string; labels?: Record<string, string> } }>(JOBS, ns, {
          labelSelector: "agents.re-cinq.com/agent",
        }),
      ]);
      const at = Date.now();
      for (const j of jobs.items) {
        const agent = j.metadata.labels?.["agents.re-cinq.com/agent"] ?? "";
        jobsSeen.set(agent, (jobsSeen.get(agent) ?? new Set()).add(j.metadata.name));
      }
      const createdAt = new Map(created.map((c) => [c.uid, c.createdAt]));
      const snaps: AgentSnap[] = agents.items
        .filter((x) => createdAt.has(x.metadata.uid))
        .map((x) => {
          const phase = x.status?.phase ?? "Pending";
          const status = statusFingerprint(x.status);
          const seen = statusSeen.get(x.metadata.uid);
          const since = seen?.status === status ? seen.since : at;
          statusSeen.set(x.metadata.uid, { status, since });
          if (isTerminal(phase) && !seenTerminal.has(x.metadata.uid)) {
            seenTerminal.add(x.metadata.uid);
            toTerminalMs.push(at - (createdAt.get(x.metadata.uid) as number));
          }
          return {
            name: x.metadata.name,
            uid: x.metadata.uid,
            station: x.spec.stationRef,
            execution: executionOf(x.metadata.labels?.["soak.example/part"]),
            quietSince: since,
            phase,
            ...(x.status?.exitCode !== undefined ? { exitCode: x.status.exitCode } : {}),
            conditions: x.status?.conditions ?? [],
            deleting: x.metadata.deletionTimestamp !== undefined,
          };
        });
      const snapshot: Snapshot = {
        at,
        agents: snaps,
        stations: stations.items.map((s) => ({
          name: s.metadata.name,
          concurrencyPolicy: s.spec.concurrencyPolicy ?? "Allow",
          ...(s.spec.maxConcurrentRuns !== undefined ? { maxConcurrentRuns: s.spec.maxConcurrentRuns } : {}),
        })),
      };
      const replacing = new Set(
        snapshot.stations.filter((st) => st.concurrencyPolicy === "Replace").map((st) => st.name),
      );
      for (const x of snaps)
        if (replacing.has(x.station) && x.phase === "Running") replaceable.add(x.uid);
        else replaceable.delete(x.uid);
      violations.add([
        ...batchesTwice(target.batches(), new Map(created.map((c) => [c.uid, c.name])), at),
        ...stuckAgents(snapshot, BOUNDS),
        ...overConcurrency(snapshot),
        ...terminalDisagreements(snapshot),
      ]);
      lastSnapshot = snapshot;
      // Checked: a finished Agent goes after a while, as a user's cleanup would take it (its batch
      // is cleaned up at the provider then), so the namespace holds what runs, not the history.
      for (const x of snaps)
        if (
          isTerminal(x.phase) &&
          !x.deleting &&
          at - x.quietSince > RETIRE_AFTER_MS &&
          !retired.has(x.uid)
        ) {
          retired.add(x.uid);
          void client.delete(AGENTS, ns, x.name, { uid: x.uid }).catch(() => retired.delete(x.uid));
        }
      return snapshot;
    } catch (err) {
      // The API server may be down for a restart the schedule asked for: the next round reads again.
      log(`check skipped: ${err}`);
      return undefined;
    }
  };

  const tasks: Promise<unknown>[] = [];
  // The provider fakes' clocks.
  const ticker = setInterval(() => target.tick(), 1_000);
  // The faults, each at its time; faults on the plane or the node one after the other.
  const chains = new Map<string, Promise<unknown>>();
  const fire = (fault: Fault) => {
    const go = async () => {
      const firedAt = Date.now() - startedAt;
      if (fault.target === "leader") await collectLogs();
      try {
        const outcome = await target.inject(fault, { leader: () => leaderOf(client, ns) });
        injections.push({ fault, firedAt, outcome, skipped: false });
        log(`+${(firedAt / 1000).toFixed(1)} s fault ${fault.kind}: ${outcome}`);
      } catch (err) {
        injections.push({ fault, firedAt, outcome: String(err), skipped: true });
        log(`+${(firedAt / 1000).toFixed(1)} s fault ${fault.kind} skipped: ${err}`);
      }
    };
    const serial = fault.target === "plane" || fault.target === "node";
    const p = serial ? (chains.get(fault.target) ?? Promise.resolve()).then(go) : go();
    if (serial) chains.set(fault.target, p);
    tasks.push(p);
  };
  tasks.push(
    (async () => {
      for (const fault of schedule) {
        const wait = startedAt + fault.at - Date.now();
        if (wait > 0) await sleep(wait);
        if (stopping) return;
        fire(fault);
      }
    })(),
  );
  // The Agents, at the rate asked for; some deleted mid-run.
  const creating = (async () => {
    for (const [i, entry] of mix.entries()) {
      const wait = startedAt + (i * 60_000) / a.rate - Date.now();
      if (wait > 0) await sleep(wait);
      if (stopping || (a.agents === undefined && Date.now() - startedAt >= durationMs)) return;
      try {
        // A create whose answer was lost to a fault and retried reads the Agent it made (create's 409).
        const { object } = await retry(`create Agent ${entry.name}`, () =>
          client.create<AgentObj>(AGENTS, ns, agentObject(ns, entry) as AgentObj),
        );
        if (!object) throw new Error(`create Agent ${entry.name}: no object in the answer`);
        created.push({ name: entry.name, uid: object.metadata.uid, createdAt: Date.now() });
      } catch (err) {
        log(`${err}`);
        continue;
      }
      if (entry.deleteAfterMs !== undefined)
        tasks.push(
          sleep(entry.deleteAfterMs).then(async () => {
            deletedBySoak.add(entry.name);
            await retry(`delete Agent ${entry.name}`, () => client.delete(AGENTS, ns, entry.name)).catch(
              (e) => log(`${e}`),
            );
          }),
        );
    }
  })();
  tasks.push(creating);
  // The checks, and the controller's logs, until every Agent is accounted for.
  const drainMs = a.drainMs ?? Math.max(...Object.values(BOUNDS.running)) + 60_000;
  let lastCreated = startedAt + durationMs;
  let lastLogs = 0;
  let creatingDone = false;
  void creating.then(() => {
    creatingDone = true;
    lastCreated = Date.now();
  });
  for (;;) {
    await sleep(CHECK_EVERY_MS);
    const s = await check();
    if (Date.now() - lastLogs > LOGS_EVERY_MS) {
      lastLogs = Date.now();
      await collectLogs();
    }
    const open = created.filter((c) => !seenTerminal.has(c.uid) && !deletedBySoak.has(c.name)).length;
    if (s && created.length > 0)
      log(
        `${created.length} created, ${seenTerminal.size} terminal, ${open} open, ${injections.length}/${schedule.length} faults, ${violations.all.length} violations`,
      );
    const faultsDone = injections.length >= schedule.length;
    const drained = creatingDone && Date.now() > lastCreated + drainMs;
    if (stopping || (creatingDone && faultsDone && open === 0) || drained) break;
  }
  clearInterval(ticker);
  stopping = true;
  await Promise.allSettled(tasks);
  const final = (await check()) ?? lastSnapshot ?? { at: Date.now(), agents: [], stations: [] };
  violations.add(lostAgents(created, seenTerminal, deletedBySoak, final, replaceable));
  violations.add(twoJobs(jobsSeen, final.at));
  await collectLogs();
  const endedAt = Date.now();
  process.off("SIGINT", onSignal);

  const report = buildReport({
    seed: a.seed,
    startedAt,
    endedAt,
    load: {
      start: loadStart.map((x) => Number(x.toFixed(2))),
      end: loadavg().map((x) => Number(x.toFixed(2))),
    },
    schedule,
    injections,
    created: created.length,
    toTerminalMs,
    violations: violations.all,
    logs: [...logLines.values()],
    notYet: target.notYet,
  });
  console.log("");
  for (const [k, v] of table(report)) console.log(`${(k ?? "").padEnd(44)} ${v ?? ""}`);
  const file = writeResult(`${new Date(startedAt).toISOString().replace(/[:.]/g, "-")}-soak.json`, report);
  console.log(`\nwrote ${file}\nreplay: npm run soak -- --seed ${a.seed}${replayFlags(a)}`);
}

function replayFlags(a: SoakArgs): string {
  return [
    a.agents !== undefined ? ` --agents ${a.agents}` : ` --duration ${(a.durationMs ?? 0) / 1000}s`,
    ` --rate ${a.rate}`,
    a.faults !== undefined ? ` --faults ${a.faults}` : "",
    a.drainMs !== undefined ? ` --drain ${a.drainMs / 1000}s` : "",
    a.kubeconfig
      ? ` --kubeconfig ${a.kubeconfig} --exec-image ${a.execImage} --namespace ${a.namespace}`
      : "",
  ].join("");
}
