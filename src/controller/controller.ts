/**
 * The leader's reconcile loop: four informers (Agents, Stations, AgentDefinitions, the run Jobs)
 * over one shared cache, an independent safety-net poll, and a per-key work queue that feeds
 * each changed Agent through gather → core → executor.
 *
 * Work is O(changed): a watch event enqueues only the Agents it concerns (the Agent itself, the
 * Agent owning a Job, the Pending Agents of a Station that freed a slot), and concurrency and
 * pruning read the cache (with a by-Station index) instead of listing. Only the poll touches
 * everything, every ~15 s.
 */

import type { V1Job } from "@kubernetes/client-node";
import { providerFor } from "../batch/index.js";
import type { BatchProvider, BatchProviderName } from "../batch/provider.js";
import type { ControllerSettings } from "../core/input.js";
import { isSettled, settledAgentsWithWork } from "../core/state-machine/reconcile.js";
import { type Agent, type AgentDefinition, isTerminal, phaseOf, type Station } from "../core/types.js";
import type { KubeClient } from "../kube/client.js";
import { apiEventWriter } from "../kube/event-writer.js";
import { AGENT_DEFINITIONS, AGENTS, JOBS, STATIONS } from "../kube/resources.js";
import type { Change } from "./cache.js";
import { controllingAgent, keysForAgentChanges, keysForJobChanges } from "./change-keys.js";
import { type ControllerConfig, DEFAULT_LOG_READ_CONCURRENCY } from "./config.js";
import { ReconcileContainment } from "./containment.js";
import { type ExecutionReport, Executor, type SinkDelivery } from "./executor.js";
import { agentAfterConflict } from "./fresh-after-conflict.js";
import { gather } from "./gather.js";
import { abortableSleep, Informer, type InformerState } from "./informer.js";
import { EventRecorder, type KubeEventRecorder } from "./kube-events/recorder.js";
import { RunMemory } from "./memory.js";
import type { ControllerMetrics } from "./metrics.js";
import { PriceOverrides } from "./price-overrides.js";
import { ProviderLimits } from "./provider-limits.js";
import { Semaphore } from "./semaphore.js";
import { StationIndex } from "./station-index.js";
import { cachedAgent, cachedDefinition, cachedJob, cachedStation } from "./transform.js";
import { WorkQueue } from "./workqueue.js";

/** Jobs the controller creates carry this label (docs/run-pod.md#the-job-and-its-pod-template). */
export const JOB_SELECTOR = "agents.re-cinq.com/component=job";

export interface ControllerDeps {
  config: ControllerConfig;
  client: KubeClient;
  metrics: ControllerMetrics;
  now?: () => number;
  random?: () => number;
  provider?: (name: BatchProviderName) => BatchProvider;
  sinks?: SinkDelivery;
  /** Kubernetes Events; default: an EventRecorder writing events.k8s.io/v1 Events as POD_NAME. */
  kubeEvents?: KubeEventRecorder;
  log?: (msg: string) => void;
  /** Agents reconciled in parallel (different keys only). */
  workers?: number;
  /** Observes every executed reconcile (tests, bench). */
  onReconciled?: (agent: string, report: ExecutionReport) => void;
  /** The caches and watch cursors of this replica's previous term, to resume from (process.ts). */
  resume?: ControllerCaches;
}

/** The four informers' caches and watch cursors, carried from one leadership term to the next. */
export interface ControllerCaches {
  agents?: InformerState<Agent>;
  stations?: InformerState<Station>;
  definitions?: InformerState<AgentDefinition>;
  jobs?: InformerState<V1Job>;
}

export class AgentController {
  readonly agents: Informer<Agent>;
  readonly stations: Informer<Station>;
  readonly definitions: Informer<AgentDefinition>;
  readonly jobs: Informer<V1Job>;
  readonly memory = new RunMemory();
  /** Provider endpoints: who runs against which, what was learned of each (docs/provider-limits.md). */
  readonly providers: ProviderLimits;
  /** Where the core's recordEvent actions go (own recorder unless one was passed in). */
  readonly kubeEvents: KubeEventRecorder;
  /** The installation's price overrides, read from their ConfigMap each poll interval. */
  readonly prices: PriceOverrides;
  private readonly ownRecorder: EventRecorder | undefined;
  private readonly byStation: StationIndex;
  private readonly queue: WorkQueue;
  private readonly executor: Executor;
  private readonly now: () => number;
  private readonly log: (msg: string) => void;
  private readonly settings: ControllerSettings;
  /** An Agent whose rules keep throwing is contained after RECONCILE_ERROR_TRIES (docs/controller.md#watch-poll-and-cache). */
  private readonly containment: ReconcileContainment;
  /** Bounds the concurrent pod log reads (LOG_READ_CONCURRENCY). */
  private readonly logReads: Semaphore;
  private abort: AbortController | undefined;
  private loops: Promise<unknown> | undefined;
  /** Reconciles executed, for tests and the benchmark. */
  reconciles = 0;

  constructor(private readonly d: ControllerDeps) {
    const c = d.config;
    const t = c.timings;
    this.now = d.now ?? Date.now;
    this.log = d.log ?? ((m) => console.log(JSON.stringify({ level: "info", msg: m })));
    const random = d.random ?? Math.random;
    this.logReads = new Semaphore(c.logReadConcurrency ?? DEFAULT_LOG_READ_CONCURRENCY);
    this.settings = {
      namespace: c.namespace,
      agentImage: c.agentImage,
      maxOutputBytes: c.maxOutputBytes,
      batchEnabled: c.batchEnabled,
      realtimeEnabled: c.realtimeEnabled,
      batchPollSeconds: c.batchPollSeconds,
      stuckPodSeconds: c.stuckPodSeconds,
      providerMaxHoldSeconds: c.providerMaxHoldSeconds,
      ...(c.realtimeSigningKey ? { realtimeSigningKey: c.realtimeSigningKey } : {}),
      githubApiUrl: c.githubApiUrl,
      githubServerUrl: c.githubServerUrl,
      cliVersions: c.cliVersions,
      agentBaseUrls: c.agentBaseUrls,
      ...(c.gateway ? { gateway: c.gateway } : {}),
      deliveryTargetRepos: c.deliveryTargetRepos,
      deliveryBranchPrefix: c.deliveryBranchPrefix,
      runPodPolicy: c.runPodPolicy,
    };
    const common = {
      client: d.client,
      namespace: c.namespace,
      pageSize: t.listPageSize,
      watchTimeoutSeconds: t.watchTimeoutSeconds,
      backoffBaseMs: t.backoffBaseMs,
      backoffMaxMs: t.backoffMaxMs,
      random,
      now: this.now,
      sleep: abortableSleep,
      log: this.log,
    };
    this.containment = new ReconcileContainment(c.reconcileErrorTries, this.log);
    this.byStation = new StationIndex((name) => this.agents.cache.get(name));
    this.providers = new ProviderLimits({
      learning: c.providerLearning,
      settings: this.settings,
      now: this.now,
      agent: (n) => this.agents.cache.get(n),
      station: (n) => this.stations.cache.get(n),
      definition: (n) => this.definitions.cache.get(n),
      issued: (n) => this.memory.isIssued(n),
    });
    this.agents = new Informer<Agent>({
      ...common,
      resource: AGENTS,
      resume: d.resume?.agents,
      fullPageSize: t.agentListPageSize,
      transform: cachedAgent,
      onChanges: (ch) => this.onAgentChanges(ch),
      onList: () => d.metrics.resyncs.inc(),
      onReconnect: () => d.metrics.watchReconnects.inc(),
    });
    this.stations = new Informer<Station>({
      ...common,
      resource: STATIONS,
      resume: d.resume?.stations,
      transform: cachedStation,
      onChanges: (ch) => {
        for (const x of ch) {
          this.providers.restation(this.byStation.agents(x.name) as Agent[]);
          this.enqueueWaiting(x.name);
        }
      },
    });
    this.definitions = new Informer<AgentDefinition>({
      ...common,
      resource: AGENT_DEFINITIONS,
      resume: d.resume?.definitions,
      transform: cachedDefinition,
      onChanges: (ch) => {
        // A changed recipe (its key, its base URL) may move its Stations' waiting Agents to another endpoint.
        const names = new Set(ch.map((x) => x.name));
        for (const st of this.stations.cache.values()) {
          if (names.has(st.spec.agentDefRef)) {
            this.providers.restation(this.byStation.agents(st.metadata.name ?? "") as Agent[]);
          }
        }
      },
    });
    this.jobs = new Informer<V1Job>({
      ...common,
      resource: JOBS,
      resume: d.resume?.jobs,
      labelSelector: JOB_SELECTOR,
      transform: cachedJob,
      // Nothing reads the Job of a finished Agent again (gather reads Jobs of Running runs only).
      keep: (job) => !this.ownerFinished(job),
      onChanges: (ch) => {
        for (const name of keysForJobChanges(ch)) this.queue.add(name);
      },
    });
    this.ownRecorder = d.kubeEvents
      ? undefined
      : new EventRecorder({ writer: apiEventWriter(d.client), reportingInstance: c.podName, log: this.log });
    this.kubeEvents = d.kubeEvents ?? (this.ownRecorder as EventRecorder);
    this.prices = new PriceOverrides({
      client: d.client,
      namespace: c.namespace,
      kubeEvents: this.kubeEvents,
      onRefused: (n) => d.metrics.priceOverrideErrors.inc(n),
      log: this.log,
    });
    this.executor = new Executor({
      client: d.client,
      namespace: c.namespace,
      memory: this.memory,
      metrics: d.metrics,
      provider: d.provider ?? ((name) => providerFor(name)),
      sinks: d.sinks,
      kubeEvents: this.kubeEvents,
      observeAgent: (agent) => this.agents.observe(agent),
      onRunStarted: (name) => this.providers.started(name),
      onBatchThrottled: (name, status, retryAfter) => this.providers.batchThrottled(name, status, retryAfter),
      now: this.now,
      log: this.log,
    });
    this.queue = new WorkQueue((key) => this.reconcileOne(key), {
      concurrency: d.workers ?? 32,
      retryDelayMs: 1000,
      onError: (key, err) => {
        d.metrics.reconcileErrors.inc();
        this.log(`${key}: reconcile error, retrying: ${String(err)}`);
      },
    });
  }

  /**
   * The caches and cursors for the next term (those of informers that have synced and whose loops
   * have ended): this term no longer writes to them, even while its stop waits on reconciles.
   */
  caches(): ControllerCaches {
    return {
      agents: this.agents.handOn(),
      stations: this.stations.handOn(),
      definitions: this.definitions.handOn(),
      jobs: this.jobs.handOn(),
    };
  }

  /** True once every cache has been filled by its first LIST. */
  get synced(): boolean {
    return this.agents.synced && this.stations.synced && this.definitions.synced && this.jobs.synced;
  }

  /** Starts the informers and the poll; resolves once the caches are synced. */
  async start(): Promise<void> {
    if (this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    // Stations, definitions and Jobs first, so the first Agent reconciles see them.
    const aux = [this.stations, this.definitions, this.jobs].map((i) => this.startInformer(i, abort.signal));
    await Promise.all([...aux.map((x) => x.synced), this.prices.refresh(abort.signal)]);
    const agents = this.startInformer(this.agents, abort.signal);
    await agents.synced;
    // The Jobs were listed before the Agents that own them: drop those of finished runs now.
    this.jobs.sweep();
    this.d.metrics.setPhaseCounts([...this.agents.cache.values()].map((a) => a.status?.phase ?? "Pending"));
    this.loops = Promise.all([
      ...aux.map((x) => x.done),
      agents.done,
      this.pollLoop(abort.signal),
      this.pricesLoop(abort.signal),
    ]);
  }

  /** Stops the loops and waits for in-flight reconciles to finish. Releases nothing forcibly. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.queue.stop();
    await this.loops;
    // Kubernetes Events still queued get a few seconds; a step-down never waits on them longer.
    await this.ownRecorder?.stop();
  }

  /** Resolves when no reconcile is queued or running (tests). */
  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
  }

  private startInformer(
    i: { synced: boolean; run(signal: AbortSignal): Promise<void> },
    signal: AbortSignal,
  ) {
    let resolveSynced!: () => void;
    const synced = new Promise<void>((r) => {
      resolveSynced = r;
    });
    const done = (async () => {
      // The first LIST happens inside run(); poll for it so start() can wait for the cache.
      const tick = setInterval(() => {
        if (i.synced || signal.aborted) {
          clearInterval(tick);
          resolveSynced();
        }
      }, 20);
      try {
        await i.run(signal);
      } finally {
        clearInterval(tick);
        resolveSynced();
      }
    })();
    return { synced, done };
  }

  /** Re-reads the price overrides each poll interval (a GET of one ConfigMap; parsed only when changed). */
  private async pricesLoop(signal: AbortSignal): Promise<void> {
    const t = this.d.config.timings;
    while (!signal.aborted) {
      await abortableSleep(Math.min(t.pollIntervalMs, 10_000), signal);
      if (!signal.aborted) await this.prices.refresh(signal);
    }
  }

  private async pollLoop(signal: AbortSignal): Promise<void> {
    const t = this.d.config.timings;
    while (!signal.aborted) {
      await abortableSleep(t.pollIntervalMs, signal);
      if (signal.aborted) return;
      try {
        await this.pollOnce(signal);
      } catch (err) {
        if (!signal.aborted) this.log(`poll failed: ${String(err)}`);
      }
    }
  }

  /**
   * The safety net: re-list everything and reconcile every Agent. The LISTs carry metadata only;
   * an object whose listed resourceVersion the cache lacks (a missed event) is read whole, and
   * its change reconciles it. A settled Agent (finished, no finalizer, not being deleted) can only
   * be pruned, so it is decided once per Station by the core's `settledAgentsWithWork` rather than
   * by a reconcile of its own; one with batch memory left (a cleanup outcome to report) still gets
   * its reconcile.
   */
  async pollOnce(signal?: AbortSignal): Promise<void> {
    await Promise.all([
      this.stations.resync(signal),
      this.definitions.resync(signal),
      this.jobs.resync(signal),
    ]);
    await this.agents.resync(signal);
    const phases: string[] = [];
    for (const a of this.agents.cache.values()) {
      phases.push(a.status?.phase ?? "Pending");
      const name = a.metadata.name;
      if (!name || (isSettled(a) && !this.memory.peekBatch(a.metadata.uid ?? ""))) continue;
      this.queue.add(name);
    }
    for (const stationName of this.byStation.stations()) {
      const station = this.stations.cache.get(stationName);
      if (!station) continue;
      for (const a of settledAgentsWithWork(station, this.byStation.agents(stationName))) {
        if (a.metadata.name) this.queue.add(a.metadata.name);
      }
    }
    this.d.metrics.setPhaseCounts(phases);
  }

  private onAgentChanges(changes: Change<Agent>[]): void {
    const freedEndpoints = new Set<string>();
    for (const ch of changes) {
      this.memory.observe(ch.object, ch.type === "delete");
      if (ch.type === "delete") this.containment.forget(ch.object.metadata.uid ?? "");
      this.byStation.apply(ch);
      const freed = this.providers.observe(ch.object, ch.type === "delete");
      if (freed) freedEndpoints.add(freed);
    }
    const keys = keysForAgentChanges(changes);
    for (const name of keys.reconcile) this.queue.add(name);
    for (const job of keys.forgetJobs) this.jobs.forget(job);
    for (const station of keys.freedStations) this.enqueueWaiting(station);
    // A run against a provider endpoint ended: the Agents of every Station waiting on it, oldest first.
    for (const endpoint of freedEndpoints) {
      for (const name of this.providers.waitingOn(endpoint)) this.queue.add(name);
    }
  }

  /** True when the Agent that owns this Job is cached as finished (its Job is no longer read). */
  private ownerFinished(job: V1Job): boolean {
    const owner = controllingAgent(job);
    const agent = owner ? this.agents.cache.get(owner.name) : undefined;
    return !!agent && agent.metadata.uid === owner?.uid && isTerminal(phaseOf(agent));
  }

  private enqueueWaiting(station: string): void {
    for (const name of this.byStation.names(station)) {
      const a = this.agents.cache.get(name);
      if (a && (a.status?.phase ?? "Pending") === "Pending") this.queue.add(name);
    }
  }

  private async reconcileOne(name: string): Promise<void> {
    const agent = this.agents.cache.get(name);
    if (!agent) return;
    // Starts against a limited provider endpoint are made one at a time (docs/provider-limits.md).
    const endpoint = this.providers.limits(agent, this.stations.cache.get(agent.spec.stationRef));
    if (endpoint !== undefined) return this.providers.exclusive(endpoint, () => this.reconcileAgent(name));
    return this.reconcileAgent(name);
  }

  private async reconcileAgent(name: string): Promise<void> {
    // Read again: a wait for the endpoint may have let the cache move on.
    const cached = this.agents.cache.get(name);
    if (!cached) return;
    // After a 409, never compute from the refused version again (fresh-after-conflict.ts).
    const agent = await agentAfterConflict(cached, {
      conflictedAt: (uid) => this.memory.conflictedAt(uid),
      reread: (n) => this.d.client.get<Agent>(AGENTS, this.d.config.namespace, n),
      store: (fresh) => {
        this.agents.observe(fresh);
        return this.agents.cache.get(fresh.metadata.name ?? "");
      },
    });
    if (!agent) return;
    const uid = agent.metadata.uid ?? "";
    const input = await gather(agent, {
      cache: {
        agent: (n) => this.agents.cache.get(n),
        station: (n) => this.stations.cache.get(n),
        definition: (n) => this.definitions.cache.get(n),
        job: (n) => this.jobs.cache.get(n),
        // Frozen: the core only reads it (a write would throw rather than corrupt the view).
        stationAgents: (s) => this.byStation.agents(s) as Agent[],
      },
      client: this.d.client,
      namespace: this.d.config.namespace,
      settings: this.settings,
      pendingCreations: (s) => this.memory.issuedFor(s),
      batch: (u) => this.memory.peekBatch(u) ?? {},
      jobCreateFailure: (u) => this.memory.jobCreateFailure(u),
      provider: (a, st, def) => this.providers.inputFor(a, st, def),
      prices: () => this.prices.table(),
      now: this.now,
      logReads: this.logReads,
    });
    const actions = this.containment.decide(input);
    // A cleanup outcome is one-shot: this reconcile consumed it.
    if (input.batch.cleanupResult) delete this.memory.batchFor(uid).cleanupResult;
    this.reconciles++;
    if (actions.length === 0) return;
    const report = await this.executor.execute(agent, actions);
    this.d.onReconciled?.(name, report);
    if (report.reconcileAgain) this.queue.add(name);
    // A retry backoff (Job creation, batch submit) ends: come back then rather than at the next poll.
    if (report.retryAt !== undefined) this.queue.addAfter(name, Math.max(0, report.retryAt - this.now()));
  }
}
