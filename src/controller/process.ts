/**
 * One controller replica: health server, leader elector, and — only while leading — the
 * reconcile loop. A standby makes no reconcile requests. Each time a replica becomes leader it
 * builds a fresh controller (fresh memory, work queue and indexes). A replica that lost its lease
 * and wins it back within a watch timeout hands the new controller the caches and watch cursors of
 * its last term: they are brought up to date (a metadata LIST and a GET of each changed object)
 * before any reconcile, and each watch resumes from the last resourceVersion it saw, as the seed
 * has every watch reconnect do, instead of re-listing every object whole, even when the last term's
 * stop is still waiting on reconciles. Otherwise (first term, a longer standby) the caches are
 * dropped and the new term lists.
 */
import type { BatchProvider, BatchProviderName } from "../batch/provider.js";
import type { KubeClient } from "../kube/client.js";
import type { ControllerConfig } from "./config.js";
import { AgentController, type ControllerCaches } from "./controller.js";
import type { ExecutionReport, SinkDelivery } from "./executor.js";
import { type HealthServer, startHealthServer } from "./health.js";
import { abortableSleep } from "./informer.js";
import { LeaderElector } from "./leader/elector.js";
import { ControllerMetrics } from "./metrics.js";

/** How long a step-down waits for the old controller's in-flight reconciles. */
const STOP_GRACE_MS = 30_000;

export interface ReplicaOptions {
  config: ControllerConfig;
  client: KubeClient;
  now?: () => number;
  random?: () => number;
  provider?: (name: BatchProviderName) => BatchProvider;
  sinks?: SinkDelivery;
  log?: (msg: string) => void;
  /** Bind address of the health server (tests use 127.0.0.1). */
  healthHost?: string;
  /** Skip the health server (tests that run many replicas). */
  noHealthServer?: boolean;
  onReconciled?: (agent: string, report: ExecutionReport) => void;
  /** The process's metrics, when something outside the replica records into them too (main.ts: sinks). */
  metrics?: ControllerMetrics;
  /** How long a step-down waits for the old controller's in-flight reconciles (tests shorten it). */
  stopGraceMs?: number;
}

export class ControllerReplica {
  readonly metrics: ControllerMetrics;
  readonly elector: LeaderElector;
  controller: AgentController | undefined;
  health: HealthServer | undefined;
  private readonly abort = new AbortController();
  private electorLoop: Promise<void> | undefined;
  /** Serialises start/stop of the reconcile loop across leadership changes. */
  private transition: Promise<void> = Promise.resolve();
  /** The last term's caches and cursors, kept for one watch timeout after a step-down. */
  private kept: { caches: ControllerCaches; timer: NodeJS.Timeout } | undefined;
  private readonly log: (msg: string) => void;
  private readonly now: () => number;

  constructor(private readonly o: ReplicaOptions) {
    this.metrics = o.metrics ?? new ControllerMetrics();
    this.now = o.now ?? Date.now;
    const id = o.config.podName;
    this.log = o.log ?? ((m) => console.log(JSON.stringify({ level: "info", replica: id, msg: m })));
    this.elector = new LeaderElector({
      client: o.client,
      namespace: o.config.namespace,
      identity: id,
      leaseDurationMs: o.config.timings.leaseDurationMs,
      tickMs: o.config.timings.leaseTickMs,
      now: this.now,
      sleep: abortableSleep,
      onStartedLeading: () => this.lead(),
      onStoppedLeading: () => this.standBy(),
      log: this.log,
    });
  }

  get isLeader(): boolean {
    return this.elector.isLeader;
  }

  /** Alive: the election loop reached the API server or at least keeps ticking. */
  healthy(): boolean {
    return !this.abort.signal.aborted;
  }

  /** Ready: a leader whose caches are synced, or a standby whose last Lease read succeeded. */
  ready(): boolean {
    if (this.elector.isLeader) return this.controller?.synced === true;
    const last = this.elector.lastSuccessfulTick;
    return last !== undefined && this.now() - last <= 3 * this.o.config.timings.leaseTickMs;
  }

  async start(): Promise<void> {
    if (!this.o.noHealthServer) {
      this.health = await startHealthServer(
        this.o.config.healthPort,
        { registry: this.metrics.registry, healthy: () => this.healthy(), ready: () => this.ready() },
        this.o.healthHost ?? this.o.config.healthHost,
      );
    }
    this.electorLoop = this.elector.run(this.abort.signal);
  }

  /** Graceful stop: no new work, in-flight reconciles finish, then the Lease is released. */
  async stop(opts: { releaseLease?: boolean } = {}): Promise<void> {
    this.abort.abort();
    await this.electorLoop;
    this.standBy();
    await this.transition;
    if (opts.releaseLease !== false) await this.elector.release();
    await this.health?.close();
  }

  /**
   * Queues a leadership transition. A transition that throws is logged and does not poison the
   * chain: the next step-down or takeover must still run.
   */
  private enqueueTransition(what: string, step: () => Promise<void>): void {
    this.transition = this.transition.then(step).catch((err) => this.log(`${what} failed: ${String(err)}`));
  }

  private lead(): void {
    this.enqueueTransition("leading", async () => {
      if (this.controller || !this.elector.isLeader) return;
      const resume = this.takeKept();
      const c = new AgentController({
        config: this.o.config,
        client: this.o.client,
        metrics: this.metrics,
        now: this.o.now,
        random: this.o.random,
        provider: this.o.provider,
        sinks: this.o.sinks,
        log: this.log,
        onReconciled: this.o.onReconciled,
        ...(resume ? { resume } : {}),
      });
      this.controller = c;
      this.log(
        resume
          ? "controller starting (leader, resuming the last term's watches)"
          : "controller starting (leader)",
      );
      // Not awaited: a start stalled on an unreachable API server must not block a step-down
      // (stop() aborts the informers, which ends the start as well).
      c.start().catch((err) => this.log(`controller start failed: ${String(err)}`));
    });
  }

  private standBy(): void {
    this.enqueueTransition("standing by", async () => {
      const c = this.controller;
      this.controller = undefined;
      if (!c) return;
      // The old controller's loops are aborted at once; waiting for its in-flight reconciles is
      // bounded so a request stuck on a sick API server cannot hold up the next takeover (their
      // writes are resourceVersion-guarded either way).
      const stopped = await Promise.race([
        c.stop().then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), this.o.stopGraceMs ?? STOP_GRACE_MS).unref()),
      ]);
      this.log(stopped ? "controller stopped (standing by)" : "controller stop still pending; standing by");
      // Its informers' loops ended at the abort; a stop still waiting on reconciles (a request stuck
      // on a frozen connection) hands its caches on all the same: their late writes are ignored.
      if (!this.abort.signal.aborted) this.keep(c.caches());
    });
  }

  private keep(caches: ControllerCaches): void {
    this.takeKept();
    // Past a watch timeout the cursors are likely compacted away, and a standby should not hold memory.
    const timer = setTimeout(() => this.takeKept(), this.o.config.timings.watchTimeoutSeconds * 1000);
    timer.unref?.();
    this.kept = { caches, timer };
  }

  private takeKept(): ControllerCaches | undefined {
    const kept = this.kept;
    this.kept = undefined;
    if (kept) clearTimeout(kept.timer);
    return kept?.caches;
  }
}
