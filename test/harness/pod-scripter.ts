import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { HarnessApi } from "./api.js";
import {
  type PodScript,
  type PodScriptRule,
  renderCriLog,
  resolvePodScript,
  SCRIPT_RULE_LABEL,
  SCRIPTED_ANNOTATION,
  scripterPatch,
} from "./pod-script.js";

interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    ownerReferences?: { kind?: string }[];
  };
  spec?: { containers?: { name: string }[]; initContainers?: { name: string }[] };
}

interface ConfigMapLike {
  metadata?: { name?: string };
  data?: Record<string, string>;
}

/** Reads the rule ConfigMaps written by scriptPods() (context.ts). */
export function ruleFromConfigMap(cm: ConfigMapLike): PodScriptRule {
  const name = cm.metadata?.name ?? "?";
  try {
    return {
      name,
      order: Number(cm.data?.order ?? 0),
      matchLabels: JSON.parse(cm.data?.matchLabels ?? "{}"),
      script: JSON.parse(cm.data?.script ?? "{}") as PodScript,
    };
  } catch (err) {
    throw new Error(`pod script ConfigMap ${name} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Watches every pod and, before kwok may end it, writes each container's log as a CRI log file,
 * points a kwok `Logs` object (same name and namespace as the pod) at those files, and annotates
 * the pod with its outcome and the finish marker the kwok stage waits for.
 */
export class PodScripter {
  private readonly abort = new AbortController();
  private readonly queue: PodLike[] = [];
  private draining = false;
  /** Uids already handled; events queued before our own patch landed must not redo them. */
  private readonly done = new Set<string>();
  private loop: Promise<void> | undefined;
  private resyncLoop: Promise<void> | undefined;
  /**
   * Set when scripting a pod failed (typically the API server restarting: the pod GET works but the
   * kwok Logs endpoint is not served yet). A pod already seen by the watch gets no new event unless
   * something changes it, and a kwok-Running pod changes no more, so the failed pods are found
   * again by listing every pod: the resync loop does that while this is set.
   */
  private needsResync = false;
  /** Last error, for the readiness message when the probe pod never ends. */
  lastError: string | undefined;

  constructor(
    private readonly api: HarnessApi,
    private readonly logsDir: string,
    /** Where problems are written (one line each), e.g. an invalid test.example/exit-code value. */
    private readonly errorLog: string,
  ) {}

  private async fail(message: string): Promise<void> {
    this.lastError = message;
    await appendFile(this.errorLog, `${new Date().toISOString()} ${message}\n`).catch(() => {});
  }

  start(): void {
    this.loop = this.watchForever();
    this.resyncLoop = this.resyncForever();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all([this.loop, this.resyncLoop]);
  }

  /** While a pod failed to be scripted, re-lists every pod (once a second) and retries the unscripted. */
  private async resyncForever(): Promise<void> {
    while (!this.abort.signal.aborted) {
      await sleep(1000, undefined, { signal: this.abort.signal }).catch(() => {});
      if (this.abort.signal.aborted || !this.needsResync) continue;
      this.needsResync = false;
      try {
        const list = (await this.api.ok("GET", "/api/v1/pods")) as { items?: PodLike[] };
        for (const pod of list.items ?? []) {
          if (!this.done.has(pod.metadata?.uid ?? "")) this.enqueue(pod);
        }
      } catch (err) {
        this.needsResync = true;
        await this.fail(`pod resync: ${(err as Error).message}`);
      }
    }
  }

  private async watchForever(): Promise<void> {
    while (!this.abort.signal.aborted) {
      try {
        // No resourceVersion: the server first replays every existing pod as ADDED, so a reconnect
        // (e.g. after an API server restart) also picks up pods created while we were away.
        await this.api.watch(
          "/api/v1/pods?watch=true&allowWatchBookmarks=false",
          (event) => {
            if (event.type === "ADDED" || event.type === "MODIFIED") this.enqueue(event.object as PodLike);
          },
          this.abort.signal,
        );
      } catch (err) {
        if (!this.abort.signal.aborted) await this.fail(`pod watch: ${(err as Error).message}`);
      }
      if (!this.abort.signal.aborted) await sleep(200).catch(() => {});
    }
  }

  private enqueue(pod: PodLike): void {
    if (pod.metadata?.deletionTimestamp || pod.metadata?.annotations?.[SCRIPTED_ANNOTATION]) return;
    this.queue.push(pod);
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    const done = this.done;
    try {
      for (let pod = this.queue.shift(); pod !== undefined; pod = this.queue.shift()) {
        const key = pod.metadata?.uid ?? "";
        if (done.has(key) || this.abort.signal.aborted) continue;
        try {
          await this.scriptPod(pod);
          done.add(key);
        } catch (err) {
          // Retried by a later event, the next watch replay, or the resync this sets off.
          this.needsResync = true;
          await this.fail(`pod ${pod.metadata?.namespace}/${pod.metadata?.name}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async scriptPod(pod: PodLike): Promise<void> {
    const ns = pod.metadata?.namespace ?? "";
    const name = pod.metadata?.name ?? "";
    const uid = pod.metadata?.uid ?? "";
    const annotations = pod.metadata?.annotations ?? {};
    const labels = pod.metadata?.labels ?? {};
    const rules = await this.rules(ns);
    const script = resolvePodScript(rules, labels, annotations);

    const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map(
      (c) => c.name,
    );
    const dir = join(this.logsDir, ns, name, uid);
    await mkdir(dir, { recursive: true });
    const now = new Date();
    const logs = [];
    for (const container of containers) {
      // A file the test wrote (a log too large for a ConfigMap) is served as it is.
      let file = script.logFiles?.[container];
      if (file === undefined) {
        file = join(dir, `${container}.log`);
        await writeFile(file, renderCriLog(script.logs?.[container] ?? "", now));
      }
      logs.push({ containers: [container], logsFile: file, follow: false });
    }
    await this.putLogs(ns, name, uid, logs);

    const ownedByJob = (pod.metadata?.ownerReferences ?? []).some((o) => o.kind === "Job");
    const patch = scripterPatch(script, annotations, ownedByJob, now);
    const res = await this.api.request(
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/${name}`,
      { metadata: { uid, annotations: patch } },
      "application/merge-patch+json",
    );
    // 404/409: the pod is gone or was replaced under the same name; nothing to do for this one.
    if (res.status !== 200 && res.status !== 404 && res.status !== 409) {
      throw new Error(`annotating pod -> HTTP ${res.status}: ${res.body.slice(0, 500)}`);
    }
  }

  private async rules(ns: string): Promise<PodScriptRule[]> {
    const list = (await this.api.ok(
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?labelSelector=${encodeURIComponent(`${SCRIPT_RULE_LABEL}=true`)}`,
    )) as { items?: ConfigMapLike[] };
    return (list.items ?? []).map(ruleFromConfigMap);
  }

  private async putLogs(ns: string, name: string, uid: string, logs: unknown[]): Promise<void> {
    const path = `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${ns}/logs`;
    const body = {
      apiVersion: "kwok.x-k8s.io/v1alpha1",
      kind: "Logs",
      metadata: {
        name,
        namespace: ns,
        // Garbage-collected with the pod.
        ownerReferences: [{ apiVersion: "v1", kind: "Pod", name, uid }],
      },
      spec: { logs },
    };
    const created = await this.api.request("POST", path, body);
    if (created.status === 201 || created.status === 200) return;
    if (created.status !== 409)
      throw new Error(`creating kwok Logs -> HTTP ${created.status}: ${created.body}`);
    // A previous pod of the same name left its Logs behind: replace it.
    const current = (await this.api.ok("GET", `${path}/${name}`)) as {
      metadata: { resourceVersion: string };
    };
    await this.api.ok("PUT", `${path}/${name}`, {
      ...body,
      metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  }
}
