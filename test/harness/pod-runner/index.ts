/**
 * The pod runner: a small kubelet for the local plane. It registers its own node (`runner-node-0`,
 * tainted, not a kwok node), watches the pods bound to it and runs them as local processes (see
 * pod.ts), serves their logs to `pods/log` through its kubelet endpoint, and leaves
 * nothing behind when stopped. Its own errors go to `<plane dir>/pod-runner.log`.
 * See test/harness/README.md ("Pods that really run").
 */
import { appendFileSync, readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import type { Server } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { HarnessApi } from "../api.js";
import { generateServingCert } from "../certs.js";
import { freePort } from "../ports.js";
import { type LogSource, serverPort, startKubeletServer } from "./kubelet.js";
import { RUNNER_LABEL, RUNNER_NODE_NAME, RUNNER_TAINT, RunnerNode } from "./node.js";
import { RunnerPod } from "./pod.js";
import type { ImageConfig } from "./process.js";
import type { PodJson } from "./types.js";

export { RUNNER_LABEL, RUNNER_NODE_NAME, RUNNER_TAINT } from "./node.js";

/** The pod-spec fragment that puts a pod on the runner node (merge into a pod template's spec). */
export const RUNNER_SCHEDULING = {
  nodeSelector: { [RUNNER_LABEL]: "true" },
  tolerations: [
    { key: RUNNER_TAINT.key, operator: "Equal", value: RUNNER_TAINT.value, effect: RUNNER_TAINT.effect },
  ],
} as const;

export interface PodRunnerOptions {
  api: HarnessApi;
  /** The plane directory: holds ca.crt/ca.key; the runner works in `<dir>/pod-runner`. */
  planeDir: string;
  nodeName?: string;
  /** Image name → its entrypoint and the dir mounted over /usr/local/bin in its containers. */
  images: Record<string, ImageConfig>;
  /** Mounted over /usr/local/bin in containers of every other image. */
  defaultBinDir: string;
}

/** A random /16 of 127.0.0.0/8 per runner, so planes side by side hand out different pod IPs. */
function podIpAllocator(): { take(): string; release(ip: string): void } {
  const second = 1 + Math.floor(Math.random() * 254);
  const used = new Set<string>();
  let next = 2;
  return {
    take() {
      for (let tries = 0; tries < 65_000; tries++) {
        const n = next;
        next = next >= 65_534 ? 2 : next + 1;
        const ip = `127.${second}.${n >> 8}.${n & 255}`;
        if ((n & 255) !== 0 && (n & 255) !== 255 && !used.has(ip)) {
          used.add(ip);
          return ip;
        }
      }
      throw new Error("pod runner: no free pod IP left");
    },
    release(ip) {
      used.delete(ip);
    },
  };
}

export class PodRunner {
  readonly nodeName: string;
  readonly logFile: string;
  private readonly dir: string;
  private readonly pods = new Map<string, RunnerPod>();
  /** Uids this runner has finished with; a finalizer can keep the object (and its events) around. */
  private readonly finished = new Set<string>();
  private readonly abort = new AbortController();
  private readonly ips = podIpAllocator();
  private node: RunnerNode | undefined;
  private server: Server | undefined;
  private loop: Promise<void> | undefined;
  private readonly exitHook = () => {
    for (const pod of this.pods.values()) pod.killNow();
  };
  /** Last error, for readiness messages. */
  lastError: string | undefined;

  constructor(private readonly options: PodRunnerOptions) {
    this.nodeName = options.nodeName ?? RUNNER_NODE_NAME;
    this.dir = join(options.planeDir, "pod-runner");
    this.logFile = join(options.planeDir, "pod-runner.log");
  }

  private fail(message: string): void {
    this.lastError = message;
    try {
      appendFileSync(this.logFile, `${new Date().toISOString()} ${message}\n`);
    } catch {}
  }

  /** Serves the kubelet endpoint, registers the node and starts watching its pods. */
  async start(): Promise<void> {
    await mkdir(join(this.dir, "pods"), { recursive: true });
    const { cert, key } = await generateServingCert(this.options.planeDir, "pod-runner-kubelet");
    this.server = await startKubeletServer({
      cert: readFileSync(cert),
      key: readFileSync(key),
      host: "127.0.0.1",
      port: await freePort(),
      findLog: (ns, pod, container) => this.findLog(ns, pod, container),
      onError: (m) => this.fail(m),
    });
    this.node = new RunnerNode(this.options.api, this.nodeName, serverPort(this.server), (m) => this.fail(m));
    await this.node.register();
    process.on("exit", this.exitHook);
    this.loop = this.watchForever();
  }

  /** Kills every container (SIGKILL to each process group), removes the pods' dirs, stops serving. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.node?.stop();
    await Promise.all([...this.pods.values()].map((p) => p.kill()));
    this.pods.clear();
    process.off("exit", this.exitHook);
    const closed = new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server?.closeAllConnections();
    await closed;
    await rm(this.dir, { recursive: true, force: true });
  }

  private findLog(ns: string, name: string, container: string): LogSource {
    const pod = [...this.pods.values()].find((p) => p.key === `${ns}/${name}`);
    if (!pod) return { status: 404, message: `pod ${ns}/${name} is not on node ${this.nodeName}` };
    if (!pod.hasContainer(container)) {
      return { status: 400, message: `container ${container} is not valid for pod ${name}` };
    }
    const file = pod.logFile(container);
    if (!file) {
      const state = pod.containerState(container);
      const reason = state?.kind === "waiting" ? state.reason : "ContainerCreating";
      return {
        status: 400,
        message: `container "${container}" in pod "${name}" is waiting to start: ${reason}`,
      };
    }
    return { file, running: () => pod.containerRunning(container) };
  }

  private async watchForever(): Promise<void> {
    const selector = encodeURIComponent(`spec.nodeName=${this.nodeName}`);
    while (!this.abort.signal.aborted) {
      try {
        const list = (await this.options.api.ok("GET", `/api/v1/pods?fieldSelector=${selector}`)) as {
          metadata: { resourceVersion: string };
          items: PodJson[];
        };
        const present = new Set(list.items.map((p) => p.metadata.uid));
        for (const [uid, pod] of this.pods) if (!present.has(uid)) void pod.gone();
        for (const pod of list.items) this.onPod(pod);
        const watchAbort = new AbortController();
        const stopWatch = () => watchAbort.abort();
        this.abort.signal.addEventListener("abort", stopWatch);
        // A stop() that came while the list was in flight fired before this listener existed: the
        // watch would otherwise hold stop() for its whole timeoutSeconds.
        if (this.abort.signal.aborted) watchAbort.abort();
        try {
          await this.options.api.watch(
            `/api/v1/pods?fieldSelector=${selector}&watch=true&timeoutSeconds=300&resourceVersion=${list.metadata.resourceVersion}`,
            (event) => {
              if (event.type === "ADDED" || event.type === "MODIFIED")
                this.onPod(event.object as unknown as PodJson);
              else if (event.type === "DELETED") {
                const uid = (event.object as unknown as PodJson).metadata.uid;
                void this.pods.get(uid)?.gone();
              } else if (event.type === "ERROR") watchAbort.abort(); // e.g. 410 Gone: relist
            },
            watchAbort.signal,
          );
        } finally {
          this.abort.signal.removeEventListener("abort", stopWatch);
        }
      } catch (err) {
        if (!this.abort.signal.aborted) this.fail(`pod watch: ${(err as Error).message}`);
      }
      if (!this.abort.signal.aborted) await sleep(500).catch(() => {});
    }
  }

  private onPod(pod: PodJson): void {
    if (this.abort.signal.aborted || pod.spec.nodeName !== this.nodeName) return;
    const uid = pod.metadata.uid;
    if (this.finished.has(uid)) return;
    const known = this.pods.get(uid);
    if (known) {
      known.update(pod);
      return;
    }
    const podIP = this.ips.take();
    const worker = new RunnerPod(pod, {
      api: this.options.api,
      dir: join(this.dir, "pods", `${pod.metadata.namespace}_${pod.metadata.name}_${uid}`),
      podIP,
      hostIP: "127.0.0.1",
      images: this.options.images,
      defaultBinDir: this.options.defaultBinDir,
      log: (m) => this.fail(m),
    });
    this.pods.set(uid, worker);
    void worker.done.then(() => {
      this.finished.add(uid);
      this.pods.delete(uid);
      this.ips.release(podIP);
    });
    if (pod.metadata.deletionTimestamp) {
      void worker.terminate();
      return;
    }
    worker.run().catch((err: Error) => this.fail(`pod ${worker.key}: ${err.message}`));
  }
}
