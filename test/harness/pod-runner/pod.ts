/**
 * One pod on the runner node, from binding to removal, as the kubelet's pod worker handles it:
 * emptyDir volumes, init containers in order, then the main containers together, status through
 * `pods/status`, readiness probes, `activeDeadlineSeconds`, and graceful termination on deletion.
 */
import type { ChildProcess } from "node:child_process";
import { chmod, mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { HarnessApi } from "../api.js";
import { ContainerConfigError, type EnvSources, expandVars, resolveEnv } from "./env.js";
import { CriLogWriter, terminationMessageFromLog } from "./logs.js";
import {
  type BindMount,
  containerArgv,
  containerUser,
  type ImageConfig,
  startContainerProcess,
} from "./process.js";
import { exitCodeOf, type PodView, podPhase, podStatus, type RunState, terminatedReason } from "./status.js";
import type { ContainerSpec, PodConditionJson, PodJson, ProbeSpec } from "./types.js";

/** The port a run pod's realtime supervisor listens on (docs/supervisor.md#realtime-sessions). */
export const REALTIME_PORT = 8090;
/** How often a container whose config cannot be built is retried (the kubelet resyncs a pod every ~10 s). */
const CONFIG_RETRY_MS = 2_000;
/** Readiness probe period cap: the kubelet's 10 s default would only slow tests down. */
const MAX_PROBE_PERIOD_MS = 1_000;

export interface PodContext {
  api: HarnessApi;
  /** This pod's private directory (volumes and logs). */
  dir: string;
  podIP: string;
  hostIP: string;
  images: Record<string, ImageConfig>;
  defaultBinDir: string;
  log(message: string): void;
}

type Kind = "init" | "main";

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}

export class RunnerPod {
  private readonly view: PodView;
  private readonly running = new Map<string, Running>();
  private readonly logFiles = new Map<string, string>();
  private conditions: PodConditionJson[] | undefined;
  private statusWrite: Promise<void> = Promise.resolve();
  private statusDirty = false;
  private stopping = false;
  /** Set once the runner is done with this pod: no more status writes. */
  private closed = false;
  private terminating: Promise<void> | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** Resolves when the runner may forget this pod (object deleted by us, or gone). */
  readonly done: Promise<void>;
  private resolveDone: () => void = () => {};

  constructor(
    private pod: PodJson,
    private readonly ctx: PodContext,
  ) {
    this.view = {
      init: (pod.spec.initContainers ?? []).map(() => ({ kind: "waiting", reason: "PodInitializing" })),
      main: pod.spec.containers.map(() => ({ kind: "waiting", reason: "PodInitializing" })),
      podIP: ctx.podIP,
      hostIP: ctx.hostIP,
    };
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
  }

  get key(): string {
    return `${this.pod.metadata.namespace}/${this.pod.metadata.name}`;
  }

  /** The log file of a container that has started, for the kubelet endpoint. */
  logFile(container: string): string | undefined {
    return this.logFiles.get(container);
  }

  containerRunning(container: string): boolean {
    return this.running.has(container);
  }

  containerState(container: string): RunState | undefined {
    const i = this.pod.spec.containers.findIndex((c) => c.name === container);
    if (i >= 0) return this.view.main[i];
    const j = (this.pod.spec.initContainers ?? []).findIndex((c) => c.name === container);
    return j >= 0 ? this.view.init[j] : undefined;
  }

  hasContainer(container: string): boolean {
    return this.containerState(container) !== undefined;
  }

  /** Runs the pod to its end (unless deleted first). */
  async run(): Promise<void> {
    const terminal = this.pod.status?.phase === "Succeeded" || this.pod.status?.phase === "Failed";
    if (terminal) return; // e.g. a runner restart: nothing to run again (restartPolicy Never)
    this.view.startTime = new Date().toISOString();
    await this.makeVolumes();
    this.scheduleStatus();
    this.armDeadline();
    const inits = this.pod.spec.initContainers ?? [];
    for (let i = 0; i < inits.length; i++) {
      const spec = inits[i] as ContainerSpec;
      await this.runContainer(spec, "init", i);
      const state = this.view.init[i];
      if (this.stopping || state?.kind !== "terminated" || state.exitCode !== 0) break;
    }
    if (!this.stopping && podPhase(this.view) !== "Failed") {
      for (let i = 0; i < this.pod.spec.containers.length; i++) {
        if (this.view.main[i]?.kind === "waiting")
          this.view.main[i] = { kind: "waiting", reason: "ContainerCreating" };
      }
      this.scheduleStatus();
      await Promise.all(this.pod.spec.containers.map((spec, i) => this.runContainer(spec, "main", i)));
    }
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    await this.flushStatus();
    // A terminated pod's emptyDirs go, as the kubelet tears down its volumes; logs stay until deletion.
    await this.removeVolumes();
  }

  /** A newer version of the pod from the watch. */
  update(pod: PodJson): void {
    if (pod.metadata.uid !== this.pod.metadata.uid) return;
    this.pod = pod;
    if (pod.metadata.deletionTimestamp) {
      this.terminate().catch((err: Error) => this.ctx.log(`pod ${this.key}: terminating: ${err.message}`));
    }
  }

  /**
   * Deletion: SIGTERM to every container's process group, SIGKILL after the grace period, the
   * final status, then `DELETE` with gracePeriodSeconds 0 and a uid precondition, and cleanup.
   */
  terminate(): Promise<void> {
    this.terminating ??= (async () => {
      const grace =
        this.pod.metadata.deletionGracePeriodSeconds ?? this.pod.spec.terminationGracePeriodSeconds ?? 30;
      await this.killAll(grace * 1000);
      await this.flushStatus();
      const { namespace, name, uid } = this.pod.metadata;
      const res = await this.ctx.api.request("DELETE", `/api/v1/namespaces/${namespace}/pods/${name}`, {
        kind: "DeleteOptions",
        apiVersion: "v1",
        gracePeriodSeconds: 0,
        preconditions: { uid },
      });
      if (res.status >= 300 && res.status !== 404 && res.status !== 409) {
        this.ctx.log(`pod ${this.key}: final DELETE -> HTTP ${res.status}: ${res.body.slice(0, 300)}`);
      }
      await this.cleanup();
    })();
    return this.terminating;
  }

  /** The object is gone from the API (e.g. force-deleted): stop at once and clean up. */
  async gone(): Promise<void> {
    this.stopping = true;
    this.closed = true;
    await this.killAll(0);
    await this.cleanup();
  }

  /** Plane shutdown: SIGKILL everything and remove the pod's directory. */
  async kill(): Promise<void> {
    await this.gone();
  }

  /** Synchronous last resort (process exit hook). */
  killNow(): void {
    for (const { child } of this.running.values()) signalGroup(child, "SIGKILL");
  }

  private async cleanup(): Promise<void> {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    await rm(this.ctx.dir, { recursive: true, force: true }).catch((err: Error) =>
      this.ctx.log(`pod ${this.key}: removing ${this.ctx.dir}: ${err.message}`),
    );
    this.resolveDone();
  }

  private async killAll(graceMs: number): Promise<void> {
    this.stopping = true;
    const all = [...this.running.values()];
    for (const { child } of all) signalGroup(child, graceMs > 0 ? "SIGTERM" : "SIGKILL");
    const exited = Promise.all(all.map((r) => r.exited));
    if (graceMs > 0) {
      const timer = sleep(graceMs, undefined, { ref: false }).then(() => "timeout" as const);
      if ((await Promise.race([exited.then(() => "exited" as const), timer])) === "timeout") {
        for (const { child } of all) signalGroup(child, "SIGKILL");
      }
    }
    await exited;
  }

  private armDeadline(): void {
    const seconds = this.pod.spec.activeDeadlineSeconds;
    if (seconds === undefined) return;
    this.deadlineTimer = setTimeout(() => {
      if (this.stopping || podPhase(this.view) === "Succeeded" || podPhase(this.view) === "Failed") return;
      this.view.ended = {
        reason: "DeadlineExceeded",
        message: "Pod was active on the node longer than the specified deadline",
      };
      void this.killAll((this.pod.spec.terminationGracePeriodSeconds ?? 30) * 1000).then(() =>
        this.scheduleStatus(),
      );
    }, seconds * 1000);
    this.deadlineTimer.unref();
  }

  private volumeDir(name: string): string {
    return join(this.ctx.dir, "volumes", name);
  }

  private async makeVolumes(): Promise<void> {
    for (const v of this.pod.spec.volumes ?? []) {
      if (!v.emptyDir) {
        this.ctx.log(
          `pod ${this.key}: volume ${v.name} is not an emptyDir; the runner mounts an empty dir for it`,
        );
      }
      const dir = this.volumeDir(v.name);
      await mkdir(dir, { recursive: true });
      // emptyDir is world-writable, as the kubelet creates it.
      await chmod(dir, 0o777);
    }
    await mkdir(join(this.ctx.dir, "logs"), { recursive: true });
  }

  private async removeVolumes(): Promise<void> {
    await rm(join(this.ctx.dir, "volumes"), { recursive: true, force: true }).catch(() => {});
  }

  private setState(kind: Kind, index: number, state: RunState): void {
    (kind === "init" ? this.view.init : this.view.main)[index] = state;
    this.scheduleStatus();
  }

  private envSources(): EnvSources {
    const ns = this.pod.metadata.namespace;
    const read = async (resource: string, name: string, decode: boolean) => {
      const res = await this.ctx.api.request("GET", `/api/v1/namespaces/${ns}/${resource}/${name}`);
      if (res.status === 404) return undefined;
      if (res.status !== 200)
        throw new ContainerConfigError(`reading ${resource} ${ns}/${name}: HTTP ${res.status}`);
      const data = ((res.json as { data?: Record<string, string> }).data ?? {}) as Record<string, string>;
      return Object.fromEntries(
        Object.entries(data).map(([k, v]) => [k, decode ? Buffer.from(v, "base64").toString("utf8") : v]),
      );
    };
    return {
      secret: (name) => read("secrets", name, true),
      configMap: (name) => read("configmaps", name, false),
    };
  }

  /** Everything needed to start `spec`, or the waiting reason and message while it cannot start. */
  private async prepare(spec: ContainerSpec) {
    const env = await resolveEnv(
      this.pod,
      spec,
      { podIP: this.ctx.podIP, hostIP: this.ctx.hostIP },
      this.envSources(),
    );
    if (
      (spec.ports ?? []).some((p) => p.containerPort === REALTIME_PORT) &&
      env.AGENT_REALTIME_LISTEN === undefined
    ) {
      // Stand-in for the pod's network namespace: the pod's own loopback address.
      env.AGENT_REALTIME_LISTEN = `${this.ctx.podIP}:${REALTIME_PORT}`;
    }
    const { user, nonRootViolation } = containerUser(this.pod, spec);
    if (nonRootViolation) throw new ContainerConfigError(nonRootViolation);
    // What a container runtime adds when the pod does not say.
    env.HOSTNAME ??= this.pod.spec.hostname ?? this.pod.metadata.name;
    env.PATH ??= "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    env.HOME ??= user && user.uid !== 0 ? "/" : "/root";
    const image = this.ctx.images[spec.image ?? ""];
    if (image?.unavailable !== undefined) throw new Error(`image ${spec.image}: ${image.unavailable}`);
    const argv = containerArgv(spec, image, (s) => expandVars(s, (n) => env[n]));
    const mounts: BindMount[] = [
      { source: image?.binDir ?? this.ctx.defaultBinDir, target: "/usr/local/bin", readOnly: true },
    ];
    for (const m of image?.mounts ?? []) {
      await mkdir(m.target, { recursive: true }); // the mount point, on the host
      mounts.push(m);
    }
    for (const m of spec.volumeMounts ?? []) {
      if (!(this.pod.spec.volumes ?? []).some((v) => v.name === m.name)) {
        throw new ContainerConfigError(
          `cannot find volume "${m.name}" to mount into container "${spec.name}"`,
        );
      }
      await mkdir(m.mountPath, { recursive: true }); // the mount point, on the host
      mounts.push({ source: this.volumeDir(m.name), target: m.mountPath, readOnly: m.readOnly === true });
    }
    return { argv, env, user, mounts, workingDir: spec.workingDir || "/" };
  }

  /** Starts `spec` once its config can be built, then waits for it to exit. */
  private async runContainer(spec: ContainerSpec, kind: Kind, index: number): Promise<void> {
    let launch: Awaited<ReturnType<RunnerPod["prepare"]>> | undefined;
    while (!this.stopping) {
      try {
        launch = await this.prepare(spec);
        break;
      } catch (err) {
        const reason =
          err instanceof ContainerConfigError ? "CreateContainerConfigError" : "CreateContainerError";
        const message = (err as Error).message;
        const before = (kind === "init" ? this.view.init : this.view.main)[index];
        if (!(before?.kind === "waiting" && before.message === message)) {
          this.setState(kind, index, { kind: "waiting", reason, message });
        }
        await sleep(CONFIG_RETRY_MS, undefined, { ref: false });
      }
    }
    if (!launch || this.stopping) return;

    const logFile = join(this.ctx.dir, "logs", `${spec.name}.log`);
    const writer = new CriLogWriter(logFile);
    this.logFiles.set(spec.name, logFile);
    const child = startContainerProcess(launch);
    const startedAt = new Date().toISOString();
    const containerID = `pod-runner://${this.pod.metadata.uid}/${spec.name}/${child.pid ?? 0}`;
    child.stdout?.on("data", (c: Buffer) => writer.write("stdout", c));
    child.stderr?.on("data", (c: Buffer) => writer.write("stderr", c));
    let onExit: (v: { code: number | null; signal: NodeJS.Signals | null }) => void = () => {};
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => {
      onExit = r;
    });
    child.on("error", (err) => {
      writer.write("stderr", `pod runner: cannot start container ${spec.name}: ${err.message}\n`);
      onExit({ code: 128, signal: null });
    });
    child.on("exit", (code, signal) => onExit({ code, signal }));
    const exited = (async () => {
      const { code, signal } = await exit;
      // The container's init process is gone: so is its PID namespace, with every process in it.
      signalGroup(child, "SIGKILL");
      await streamsClosed(child, 1_000);
      writer.close();
      this.running.delete(spec.name);
      const exitCode = exitCodeOf(code, signal);
      let message: string | undefined;
      if (exitCode !== 0 && spec.terminationMessagePolicy === "FallbackToLogsOnError") {
        message = terminationMessageFromLog(await readFile(logFile, "utf8").catch(() => ""));
      }
      this.setState(kind, index, {
        kind: "terminated",
        exitCode,
        reason: terminatedReason(exitCode),
        ...(message ? { message } : {}),
        startedAt,
        finishedAt: new Date().toISOString(),
        containerID,
      });
    })();
    this.running.set(spec.name, { child, exited });
    this.setState(kind, index, { kind: "running", startedAt, ready: !spec.readinessProbe, containerID });
    if (spec.readinessProbe) void this.probe(spec, kind, index, spec.readinessProbe);
    await exited;
  }

  private async probe(spec: ContainerSpec, kind: Kind, index: number, probe: ProbeSpec): Promise<void> {
    const get = probe.httpGet;
    if (!get) {
      this.ctx.log(`pod ${this.key}: container ${spec.name}: only httpGet readiness probes are supported`);
      return;
    }
    const port =
      typeof get.port === "number" ? get.port : spec.ports?.find((p) => p.name === get.port)?.containerPort;
    const url = `${(get.scheme ?? "HTTP").toLowerCase()}://${get.host ?? this.ctx.podIP}:${port}${get.path ?? "/"}`;
    const period = Math.min((probe.periodSeconds ?? 10) * 1000, MAX_PROBE_PERIOD_MS);
    const failureThreshold = probe.failureThreshold ?? 3;
    let failures = 0;
    await sleep((probe.initialDelaySeconds ?? 0) * 1000);
    while (this.running.has(spec.name) && !this.stopping) {
      let ok = false;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout((probe.timeoutSeconds ?? 1) * 1000) });
        await res.arrayBuffer();
        ok = res.status >= 200 && res.status < 400;
      } catch {
        ok = false;
      }
      failures = ok ? 0 : failures + 1;
      const state = (kind === "init" ? this.view.init : this.view.main)[index];
      if (state?.kind !== "running") return;
      const ready = ok ? true : failures >= failureThreshold ? false : state.ready;
      if (ready !== state.ready) this.setState(kind, index, { ...state, ready });
      await sleep(period);
    }
  }

  /** Coalesces status writes; each write sends the whole current status. */
  private scheduleStatus(): void {
    this.statusDirty = true;
    this.statusWrite = this.statusWrite.then(async () => {
      while (this.statusDirty) {
        this.statusDirty = false;
        await this.writeStatus();
      }
    });
  }

  private async flushStatus(): Promise<void> {
    this.scheduleStatus();
    await this.statusWrite;
  }

  private async writeStatus(): Promise<void> {
    const { namespace, name, uid } = this.pod.metadata;
    // Until it lands or the pod is dropped: a status given up on (say after an API-server outage
    // longer than a fixed number of tries) would leave the pod Running for ever, as no later event
    // makes the runner write it again.
    for (let attempt = 0; !this.closed; attempt++) {
      const status = podStatus(
        { ...this.pod, status: { conditions: this.conditions } },
        this.view,
        new Date().toISOString(),
      );
      try {
        const res = await this.ctx.api.request(
          "PATCH",
          `/api/v1/namespaces/${namespace}/pods/${name}/status`,
          { metadata: { uid }, status },
          "application/merge-patch+json",
        );
        if (res.status === 200) {
          this.conditions = status.conditions;
          return;
        }
        if (res.status === 404 || res.status === 409) return; // gone or replaced: nothing to report
        this.ctx.log(`pod ${this.key}: status -> HTTP ${res.status}: ${res.body.slice(0, 300)}`);
      } catch (err) {
        this.ctx.log(`pod ${this.key}: status: ${(err as Error).message}`);
      }
      await sleep(Math.min(5_000, 1_000 * 2 ** Math.min(attempt, 3)));
    }
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

/** Waits for the child's stdout/stderr to end; a process that left them open is cut off. */
async function streamsClosed(child: ChildProcess, timeoutMs: number): Promise<void> {
  const ended = (s: NodeJS.ReadableStream | null) =>
    s === null ||
    (s as unknown as { readableEnded: boolean }).readableEnded ||
    (s as unknown as { destroyed: boolean }).destroyed
      ? Promise.resolve()
      : new Promise<void>((r) => {
          s.once("end", () => r());
          s.once("close", () => r());
        });
  const both = Promise.all([ended(child.stdout), ended(child.stderr)]);
  const timer = sleep(timeoutMs, undefined, { ref: false });
  await Promise.race([both, timer]);
  child.stdout?.destroy();
  child.stderr?.destroy();
}
