/**
 * Executes the reconcile core's actions against the API server, the batch providers and the
 * sinks, honouring the contract in src/core/actions.ts: list order, `dependsOn` (a dependant of
 * a failed or skipped action is skipped), failures dropped for the next reconcile to recompute.
 */
import type { V1Job } from "@kubernetes/client-node";
import {
  type BatchProvider,
  BatchProviderError,
  type BatchProviderName,
  isPermanentHttpStatus,
} from "../batch/provider.js";
import type { Action, ApiKeyRef, RecordSpendAction } from "../core/actions.js";
import { AGENT_EVENTS } from "../core/events/kube-events.js";
import type { BatchMemory, BatchSubmitFailure, JobCreateFailure } from "../core/input.js";
import { withSpend } from "../core/station-limits/budget.js";
import type { Agent, AgentRef, Station } from "../core/types.js";
import type { KubeClient, WriteOutcome } from "../kube/client.js";
import { isPermanent, KubeApiError } from "../kube/errors.js";
import { AGENTS, JOBS, SECRETS, STATIONS } from "../kube/resources.js";
import type { KubeEventRecorder } from "./kube-events/recorder.js";
import type { RunMemory } from "./memory.js";
import type { ControllerMetrics } from "./metrics.js";
import { isTerminalStatus, statusFallback } from "./status-fallback.js";

/** Conflicting writes of one Station's spend tried before the entry is given up (logged). */
const SPEND_WRITE_ATTEMPTS = 5;

export interface SinkDelivery {
  deliver(req: unknown): Promise<void>;
}

export interface ExecutorDeps {
  client: Pick<KubeClient, "create" | "patchStatus" | "delete" | "jsonPatch" | "addFinalizer" | "get">;
  namespace: string;
  memory: RunMemory;
  metrics: ControllerMetrics;
  provider: (name: BatchProviderName) => BatchProvider;
  sinks?: SinkDelivery;
  /** Kubernetes Events (recordEvent actions); fire-and-forget. */
  kubeEvents?: KubeEventRecorder;
  /** Receives the Agent as stored by a successful status patch (the cache's write-through). */
  observeAgent?: (agent: Agent) => void;
  /** A run started: its Job was created or its batch submitted (provider limits space starts by it). */
  onRunStarted?: (agentName: string) => void;
  /** A batch submit was answered 429 or 529: the provider throttled (docs/provider-limits.md). */
  onBatchThrottled?: (agentName: string, status: number, retryAfterSeconds: number | undefined) => void;
  now: () => number;
  log: (msg: string) => void;
}

export interface ExecutionReport {
  /** Ids of the actions that ran and succeeded. */
  succeeded: string[];
  /** Ids that ran and failed (conflict, error) or were skipped for a failed dependency. */
  failed: string[];
  skipped: string[];
  /** A provider action stored a result: the Agent must be reconciled again with it. */
  reconcileAgain: boolean;
  /** Epoch ms at which the Agent must be reconciled again (a retry backoff ends). */
  retryAt?: number;
}

export class Executor {
  constructor(private readonly d: ExecutorDeps) {}

  async execute(agent: Agent, actions: Action[]): Promise<ExecutionReport> {
    const report: ExecutionReport = { succeeded: [], failed: [], skipped: [], reconcileAgain: false };
    const ok = new Set<string>();
    for (const action of actions) {
      if (action.dependsOn?.some((id) => !ok.has(id))) {
        report.skipped.push(action.id);
        continue;
      }
      let success = false;
      try {
        success = await this.run(agent, action, report);
      } catch (err) {
        this.d.log(`${agent.metadata.name}: ${action.type} (${action.id}) failed: ${String(err)}`);
      }
      if (success) {
        ok.add(action.id);
        report.succeeded.push(action.id);
      } else {
        report.failed.push(action.id);
      }
    }
    return report;
  }

  private async run(agent: Agent, a: Action, report: ExecutionReport): Promise<boolean> {
    const ns = this.d.namespace;
    switch (a.type) {
      case "createJob": {
        const previous = this.d.memory.jobCreateFailure(a.agent.uid);
        const failed = (err: unknown) => {
          // docs/decisions.md D-101: the core fails the Agent (permanent) or reports why it waits and retries (transient).
          const f = jobCreateFailureOf(err, previous, this.d.now());
          this.d.memory.setJobCreateFailure(a.agent.uid, f);
          report.reconcileAgain = true;
          this.d.log(
            `${a.agent.name}: Job creation failed (${f.permanent ? "permanent" : "transient"}): ${f.message}`,
          );
          return false;
        };
        let res: { created: boolean; object: V1Job | undefined };
        try {
          res = await this.d.client.create<V1Job>(JOBS, ns, a.job);
        } catch (err) {
          return failed(err);
        }
        if (!res.created) {
          // docs/decisions.md D-56: adopt an existing Job only when this Agent owns it; otherwise wait (and say why).
          const owner = res.object?.metadata?.ownerReferences?.find((r) => r.controller);
          if (owner?.uid !== a.agent.uid) {
            return failed(new Error(`Job ${a.job.metadata?.name} exists and is not owned by this Agent`));
          }
        }
        this.d.memory.setJobCreateFailure(a.agent.uid, undefined);
        this.d.memory.markIssued(a.agent.name, agent.spec.stationRef);
        this.d.onRunStarted?.(a.agent.name);
        return true;
      }
      case "patchStatus": {
        const outcome = await this.patchAgentStatus(
          a.agent,
          a.resourceVersion,
          a.status as Record<string, unknown>,
        );
        // The next reconcile must not compute from this version again (fresh-after-conflict.ts).
        if (outcome === "conflict") this.d.memory.markConflict(a.agent.uid, a.resourceVersion);
        if (outcome !== "ok")
          this.d.log(`${a.agent.name}: status patch ${outcome}; dropped, next reconcile recomputes`);
        return outcome === "ok";
      }
      case "deleteAgent": {
        const done = await this.d.client.delete(AGENTS, ns, a.agent.name, {
          propagationPolicy: "Background",
          resourceVersion: a.resourceVersion,
        });
        // A prune whose victim changed meanwhile is harmless to skip; a preempt must not proceed.
        return done || a.reason === "prune";
      }
      case "deleteJob":
        // docs/decisions.md D-22: the Agent is already Failed; the Job (and its waiting pod) only has to go.
        return this.d.client.delete(JOBS, ns, a.job, { propagationPolicy: "Background" });
      case "addFinalizer": {
        const outcome = await this.d.client.addFinalizer(
          AGENTS,
          ns,
          a.agent.name,
          { finalizers: agent.metadata.finalizers, resourceVersion: agent.metadata.resourceVersion },
          a.finalizer,
        );
        if (outcome === "conflict")
          this.d.memory.markConflict(a.agent.uid, agent.metadata.resourceVersion ?? "");
        return outcome === "ok";
      }
      case "removeFinalizer":
        return (
          (await this.d.client.jsonPatch(AGENTS, ns, a.agent.name, [
            { op: "test", path: `/metadata/finalizers/${a.index}`, value: a.finalizer },
            { op: "remove", path: `/metadata/finalizers/${a.index}` },
          ])) !== "conflict"
        );
      case "submitBatch": {
        const m = this.d.memory.batchFor(a.agent.uid);
        report.reconcileAgain = true;
        const sentAt = this.d.now();
        try {
          const apiKey = await this.apiKey(a.apiKey);
          const res = await this.submitOnce(a, apiKey, m.submitFailure);
          m.submitted = res;
          delete m.submitFailure;
          this.d.memory.markIssued(a.agent.name, agent.spec.stationRef);
          this.d.onRunStarted?.(a.agent.name);
          return true;
        } catch (err) {
          if (err instanceof BatchProviderError && (err.status === 429 || err.status === 529)) {
            this.d.onBatchThrottled?.(a.agent.name, err.status, err.retryAfterSeconds);
          }
          // docs/decisions.md D-101: the core fails the Agent (permanent) or waits and retries (transient) from this.
          m.submitFailure = submitFailureOf(
            err,
            m.submitFailure,
            this.d.now(),
            a.request.inputFileId,
            sentAt,
          );
          this.d.log(
            `${a.agent.name}: batch submit failed (${m.submitFailure.permanent ? "permanent" : "transient"}): ${m.submitFailure.message}`,
          );
          return false;
        }
      }
      case "pollBatch": {
        const m = this.d.memory.batchFor(a.agent.uid);
        m.lastPollAt = this.d.now();
        report.reconcileAgain = true;
        try {
          const apiKey = await this.apiKey(a.apiKey);
          m.pollResult = await this.d.provider(a.provider).poll(a.batchId, { ...a.ctx, apiKey });
          return true;
        } catch (err) {
          delete m.pollResult;
          this.d.log(`${a.agent.name}: batch poll failed, retried at the next poll: ${String(err)}`);
          return false;
        }
      }
      case "cancelBatch": {
        const m = this.d.memory.batchFor(a.agent.uid);
        try {
          const apiKey = await this.apiKey(a.apiKey);
          await this.d.provider(a.provider).cancel(a.batchId, apiKey);
          m.cancelledAt = this.d.now();
          m.settling = true;
          delete m.cleanupRetryAfterMs;
          return true;
        } catch (err) {
          // Items 2 and 3: retried by the finalizer until confirmed; on delete it counts as a failed cleanup.
          m.lastCleanupAt = this.d.now();
          m.cleanupResult = { state: "cancel_failed", error: errorText(err) };
          setRetryAfter(m, err);
          report.reconcileAgain = true;
          this.d.log(`${a.agent.name}: batch cancel failed, retried later: ${errorText(err)}`);
          return false;
        }
      }
      case "cleanupBatch": {
        const m = this.d.memory.batchFor(a.agent.uid);
        m.lastCleanupAt = this.d.now();
        report.reconcileAgain = true;
        try {
          const apiKey = await this.apiKey(a.apiKey);
          m.cleanupResult = await this.d.provider(a.provider).cleanup(a.batchId, apiKey);
          if (m.cleanupResult.state === "not_settled") m.settling = true;
          else delete m.settling;
          delete m.cleanupRetryAfterMs;
          return true;
        } catch (err) {
          // Before the settle check: the provider's read of the batch failed, or the key could not be
          // read for a passing reason (the API server erred), so nothing reached the provider at all.
          // A key removed from agent-secrets is permanent: that try counts (docs/decisions.md D-103).
          const unseen =
            (err instanceof BatchProviderError && err.settleUnseen) ||
            (err instanceof ApiKeyUnavailable && !err.permanent);
          // Past the settle check, the batch was seen settled: a later failure is a real one.
          if (!unseen) delete m.settling;
          m.cleanupResult = {
            state: "failed",
            error: errorText(err),
            ...(unseen ? { settleUnseen: true } : {}),
          };
          setRetryAfter(m, err);
          return false;
        }
      }
      case "discardUpload": {
        const provider = this.d.provider(a.provider);
        if (provider.discardUpload) await provider.discardUpload(a.fileId, await this.apiKey(a.apiKey));
        const failure = this.d.memory.batchFor(a.agent.uid).submitFailure;
        if (failure) delete failure.inputFileId;
        return true;
      }
      case "emitSinkEvents":
        // At most once and never blocking the reconcile: the dispatcher retries then drops.
        if (this.d.sinks) void this.d.sinks.deliver(a);
        return true;
      case "recordMetric":
        this.d.metrics.record(a.metric);
        return true;
      case "recordEvent":
        // Never awaited: the recorder queues, aggregates and rate-limits on its own.
        this.d.kubeEvents?.record(a.regarding, a.event);
        return true;
      case "reportWaiting":
        // The core's report step already turned it into the Ready condition and a Kubernetes
        // Event; only the retry is the controller's to schedule.
        if (a.retryAt !== undefined) report.retryAt = Math.min(report.retryAt ?? a.retryAt, a.retryAt);
        return true;
      case "recordSpend":
        return this.recordSpend(a);
    }
  }

  /**
   * One submit per Agent (the batch seed): when an earlier attempt's answer was lost after it was
   * sent, the batch it may have created is looked for first and adopted, with the lost attempt's
   * time as its submit time; the request is sent again only once the provider shows none
   * (docs/batch-runs.md#a-submit-whose-answer-was-lost). An undecided search fails this attempt
   * as transient, so the Pending back-off asks again later.
   */
  private async submitOnce(
    a: Extract<Action, { type: "submitBatch" }>,
    apiKey: string,
    previous: BatchSubmitFailure | undefined,
  ): Promise<{ batchId: string; at: number }> {
    const provider = this.d.provider(a.provider);
    let inputFileId = a.request.inputFileId;
    const since = previous?.unansweredSince;
    if (since !== undefined) {
      const lost = await provider.findLostSubmit({
        agentUid: a.agent.uid,
        apiKey,
        since,
        until: previous?.at ?? since,
        ...(inputFileId !== undefined ? { inputFileId } : {}),
      });
      if (lost.state === "found") {
        this.d.log(
          `${a.agent.name}: the submit whose answer was lost created batch ${lost.batchId}; adopted`,
        );
        return { batchId: lost.batchId, at: since };
      }
      if (lost.state === "undecided") throw new LostSubmitUndecided(lost.reason);
      inputFileId = lost.inputFileId ?? inputFileId;
    }
    const res = await provider.submit({
      ...a.request,
      ...(inputFileId !== undefined ? { inputFileId } : {}),
      apiKey,
    });
    return { batchId: res.batchId, at: this.d.now() };
  }

  /**
   * The Agent's status patch. A terminal patch the API server refuses (422, or 413 too large) is
   * written again without the fields it named (or the oversized ones), then with the essential
   * fields only (status-fallback.ts), and a
   * StatusFieldsDropped Event says what was left out and why: a run never stays Running because a
   * value it reported does not pass the schema.
   */
  private async patchAgentStatus(
    agent: AgentRef,
    resourceVersion: string,
    status: Record<string, unknown>,
  ): Promise<WriteOutcome> {
    const write = (s: Record<string, unknown>) =>
      this.d.client.patchStatus(
        AGENTS,
        this.d.namespace,
        agent.name,
        resourceVersion,
        s,
        this.d.observeAgent && ((obj) => this.d.observeAgent?.(obj as Agent)),
      );
    const refused = (e: unknown): e is KubeApiError =>
      e instanceof KubeApiError && (e.status === 422 || e.status === 413);
    try {
      return await write(status);
    } catch (err) {
      if (!refused(err) || !isTerminalStatus(status)) throw err;
      const refusal = { status: err.status as 422 | 413, message: err.detail };
      for (let attempt = 1; ; attempt++) {
        const fallback = statusFallback(status, refusal, attempt);
        if (fallback === undefined) throw err;
        try {
          const outcome = await write(fallback.status);
          if (outcome === "ok") {
            const { type, reason, action } = AGENT_EVENTS.statusFieldsDropped;
            const words = `${err.status} ${refusal.message}`.slice(0, 400);
            const note = `the API server refused the run's final status (${words}); written without ${fallback.dropped.map((f) => `status.${f}`).join(", ")}`;
            this.d.log(`${agent.name}: ${note}`);
            this.d.kubeEvents?.record(agent, { type, reason, action, note });
          }
          return outcome;
        } catch (again) {
          if (!refused(again)) throw again;
        }
      }
    }
  }

  /**
   * Read-modify-write of the Station's status.spend, guarded by its resourceVersion; a conflict
   * (another run of the same Station finished at the same time) re-reads and tries again.
   */
  private async recordSpend(a: RecordSpendAction): Promise<boolean> {
    for (let attempt = 1; attempt <= SPEND_WRITE_ATTEMPTS; attempt++) {
      const station = await this.d.client.get<Station>(STATIONS, a.station.namespace, a.station.name);
      if (station === undefined) return true;
      const spend = withSpend(station.status?.spend ?? [], a.entry, a.windowMs, this.d.now());
      if (spend === undefined) return true;
      const outcome = await this.d.client.patchStatus(
        STATIONS,
        a.station.namespace,
        a.station.name,
        station.metadata?.resourceVersion ?? "",
        { spend },
      );
      if (outcome === "ok") return true;
      if (outcome === "not_found") return true;
    }
    this.d.log(
      `Station ${a.station.name}: spend of Agent ${a.entry.agent} not recorded after ${SPEND_WRITE_ATTEMPTS} conflicts`,
    );
    return false;
  }

  private async apiKey(ref: ApiKeyRef): Promise<string> {
    let secret: { data?: Record<string, string> } | undefined;
    try {
      secret = await this.d.client.get<{ data?: Record<string, string> }>(
        SECRETS,
        this.d.namespace,
        ref.secretName,
      );
    } catch (err) {
      const permanent = err instanceof KubeApiError && isPermanentHttpStatus(err.status);
      throw new ApiKeyUnavailable(`reading Secret ${ref.secretName}: ${errorText(err)}`, permanent);
    }
    if (secret === undefined) throw new ApiKeyUnavailable(`Secret ${ref.secretName} not found`, true);
    const encoded = secret.data?.[ref.secretKey];
    if (encoded === undefined) {
      throw new ApiKeyUnavailable(`key ${ref.secretKey} of Secret ${ref.secretName} not found`, true);
    }
    return Buffer.from(encoded, "base64").toString("utf8");
  }
}

/** A lost submit's batch could not be told yet: the attempt fails as transient and keeps the question open. */
export class LostSubmitUndecided extends Error {
  constructor(reason: string) {
    super(`batch submit answer lost; not sent again yet: ${reason}`);
    this.name = "LostSubmitUndecided";
  }
}

/** The provider API key could not be read; `permanent` when only a change to agent-secrets can help. */
export class ApiKeyUnavailable extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = "ApiKeyUnavailable";
  }
}

/**
 * How a failed Job creation is remembered: permanent (a 4xx other than 408/409/429) or not, the
 * API server's own message, attempts in a row, and its Retry-After.
 */
export function jobCreateFailureOf(
  err: unknown,
  previous: JobCreateFailure | undefined,
  now: number,
): JobCreateFailure {
  const api = err instanceof KubeApiError ? err : undefined;
  const message = api ? `${api.status}${api.reason ? ` ${api.reason}` : ""}: ${api.detail}` : errorText(err);
  return {
    permanent: isPermanent(err),
    message,
    at: now,
    attempts: (previous?.attempts ?? 0) + 1,
    ...(api?.retryAfterMs !== undefined ? { retryAfterMs: api.retryAfterMs } : {}),
  };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function setRetryAfter(m: BatchMemory, err: unknown): void {
  const s = err instanceof BatchProviderError ? err.retryAfterSeconds : undefined;
  if (s !== undefined) m.cleanupRetryAfterMs = s * 1000;
  else delete m.cleanupRetryAfterMs;
}

/** How a failed submit is remembered: permanent or not, the message, attempts in a row, Retry-After. */
export function submitFailureOf(
  err: unknown,
  previous: BatchSubmitFailure | undefined,
  now: number,
  reusedInputFileId?: string,
  sentAt: number = now,
): BatchSubmitFailure {
  const permanent =
    err instanceof ApiKeyUnavailable || err instanceof BatchProviderError ? err.permanent : false;
  // The first send whose answer was lost stays the start of the window searched before any resend.
  const unansweredSince =
    previous?.unansweredSince ?? (err instanceof BatchProviderError && err.mayHaveActed ? sentAt : undefined);
  const retryAfterSeconds = err instanceof BatchProviderError ? err.retryAfterSeconds : undefined;
  const inputFileId =
    (err instanceof BatchProviderError ? err.inputFileId : undefined) ??
    (permanent ? undefined : reusedInputFileId);
  return {
    permanent,
    message: errorText(err),
    at: now,
    attempts: (previous?.attempts ?? 0) + 1,
    ...(retryAfterSeconds !== undefined ? { retryAfterMs: retryAfterSeconds * 1000 } : {}),
    ...(inputFileId !== undefined ? { inputFileId } : {}),
    ...(unansweredSince !== undefined ? { unansweredSince } : {}),
  };
}
