/**
 * Action builders shared by the rule groups: the status patch, metrics, sink events, and the
 * terminal transition (`finish`: patch, cost, spend, metrics, history pruning in dependency order),
 * plus the provider calls and finalizer removal both the running-batch and the finalizer rules ask for.
 */

import {
  type Action,
  type ApiKeyRef,
  BATCH_CLEANUP_FINALIZER,
  type CostExecution,
  type EgressEvent,
  type FailureKind,
  type LifecycleEvent,
  type MetricObservation,
  type PatchStatusAction,
  type SinkItem,
} from "../actions.js";
import type { BatchProviderName } from "../batch-port.js";
import { isCliDefault } from "../cli/argv.js";
import { routeModel } from "../cli/routing.js";
import { formatUsd, totalTokens } from "../pricing/estimate.js";
import { meteredRunUsage } from "../pricing/metered.js";
import { type RunUsage, type RunUsagePlan, runUsage } from "../pricing/run-usage.js";
import type { ProviderRetries } from "../provider-limits/retry-event.js";
import { windowMs } from "../station-limits/budget.js";
import { agentsToPrune } from "../station-limits/pruning.js";
import { type Agent, agentRef } from "../types.js";
import type { Ctx } from "./context.js";
import { batchModel, onFallback } from "./facts.js";
import { rfc3339 } from "./timing.js";

export function patch(c: Ctx, status: PatchStatusAction["status"], id = "patch-status"): PatchStatusAction {
  return { id, type: "patchStatus", agent: c.ref, resourceVersion: c.rv, status };
}

export function metric(id: string, m: MetricObservation, dependsOn: string[]): Action {
  return { id, type: "recordMetric", metric: m, dependsOn };
}

export function sinkEvents(c: Ctx, id: string, items: SinkItem[], dependsOn: string[]): Action[] {
  const out = c.definition?.spec.output;
  if (!out?.sinks?.length) return [];
  const source = {
    agent: c.ref.name,
    station: c.agent.spec.stationRef,
    ...(c.agent.spec.taskId ? { task: c.agent.spec.taskId } : {}),
    namespace: c.ref.namespace,
  };
  return [
    {
      id,
      type: "emitSinkEvents",
      agent: c.ref,
      source,
      sinks: out.sinks,
      select: out.select ?? [],
      vendor: routeModel(batchModel(c)),
      items,
      dependsOn,
    },
  ];
}

export const lifecycle = (
  status: LifecycleEvent["status"],
  extra: Partial<LifecycleEvent> = {},
): SinkItem => ({
  type: "lifecycle",
  event: { kind: "lifecycle", phase: "agent", status, ...extra },
});

/** Prunes the Station's history as it will be once this Agent's terminal patch landed. */
export function prune(c: Ctx, terminal: Agent, dependsOn: string[]): Action[] {
  if (!c.station) return [];
  const others = c.input.stationAgents.filter((a) => a.metadata.name !== c.ref.name);
  return agentsToPrune(c.station, [...others, terminal]).map((victim) => {
    const self = victim.metadata.name === c.ref.name;
    return {
      id: `prune-${victim.metadata.name}`,
      type: "deleteAgent" as const,
      agent: agentRef(victim),
      // The own patch just changed this Agent's resourceVersion; it is guarded by the dependency.
      ...(self ? {} : { resourceVersion: victim.metadata.resourceVersion ?? "" }),
      reason: "prune" as const,
      dependsOn,
    };
  });
}

export interface Terminal {
  phase: "Succeeded" | "Failed";
  exitCode: number;
  failureReason?: string;
  output?: string;
  sessionId?: string;
  prUrl?: string;
  jobName?: string;
  failureKind?: FailureKind;
  /** Tokens and cost read from the run's terminal lines (docs/cost-and-budgets.md). */
  usage?: RunUsage;
  /** Why the cost is unknown although the run must have spent some (status.costNote). */
  costNote?: string;
  /** The waits for a provider that limited the run (docs/provider-limits.md#what-a-user-sees). */
  providerRetries?: ProviderRetries;
}

/** The cost metrics' execution label. */
export function costExecution(c: Ctx): CostExecution {
  if (c.execution === "batch") return onFallback(c) ? "batch_fallback" : "batch";
  return jobMode(c);
}

const pricesOf = (c: Ctx) => (c.input.prices !== undefined ? { prices: c.input.prices } : {});

/** How a run's lines are read and priced: a Job run's pod log, a batch run's CLI-format lines. */
export function usagePlan(c: Ctx): RunUsagePlan {
  const execution = costExecution(c);
  if (execution === "batch") {
    const model = batchModel(c);
    return { vendor: routeModel(model), execution: "batch", model, at: c.now, ...pricesOf(c) };
  }
  // A model naming only its CLI is the CLI's default, which lines without a model name leave unknown: "default".
  return {
    vendor: c.vendor,
    execution: jobMode(c),
    model: isCliDefault(c.model) ? "" : c.model,
    at: c.now,
    ...pricesOf(c),
  };
}

/** The run's tokens and cost from its lines: a Job run's pod log, a batch run's CLI-format lines. */
export function usageOf(c: Ctx, lines: string | undefined): RunUsage | undefined {
  if (lines === undefined) return undefined;
  return runUsage({ ...usagePlan(c), lines });
}

export function usageStatus(u: RunUsage): PatchStatusAction["status"] {
  return {
    usage: { ...u.usage, totalTokens: totalTokens(u.usage) },
    costSource: u.costSource,
    ...(u.costUsd !== undefined ? { costUSD: formatUsd(u.costUsd) } : {}),
    ...(u.rejectedReportUsd !== undefined ? { costReportRejected: formatUsd(u.rejectedReportUsd) } : {}),
    ...(u.unpricedModels !== undefined ? { unpricedModels: u.unpricedModels } : {}),
    ...(u.fromMessages !== undefined
      ? {
          costNote: `the run printed no result line with its usage: its tokens and cost are summed from the ${u.fromMessages} model responses it streamed`,
        }
      : {}),
  };
}

/** The cost counters of a finished run, after its terminal patch (once per terminal transition). */
export function costMetrics(c: Ctx, u: RunUsage, dep: string[]): Action[] {
  const execution = costExecution(c);
  const base = {
    station: c.agent.spec.stationRef,
    model: (execution === "batch" ? batchModel(c) : c.model) || "default",
    execution,
  };
  const types = [
    ["input", u.usage.inputTokens],
    ["output", u.usage.outputTokens],
    ["cache_read", u.usage.cacheReadTokens],
    ["cache_write", u.usage.cacheWriteTokens],
  ] as const;
  const out: Action[] = types
    .filter(([, n]) => n > 0)
    .map(([type, value]) =>
      metric(
        `metric-tokens-${type}`,
        { name: "controller_run_tokens_total", labels: { ...base, type }, value },
        dep,
      ),
    );
  if (u.costUsd !== undefined && u.costUsd > 0) {
    out.push(
      metric("metric-cost", { name: "controller_run_cost_usd_total", labels: base, value: u.costUsd }, dep),
    );
  }
  for (const model of u.unpricedModels ?? []) {
    out.push(
      metric(
        `metric-unpriced-${model}`,
        { name: "controller_run_unpriced_models_total", labels: { station: base.station, model } },
        dep,
      ),
    );
  }
  return out;
}

/**
 * The run's entry in its Station's status.spend, when the Station has a budget and the run cost
 * something. Before the terminal patch and not a condition of it: the entry is keyed by the Agent's
 * uid, so a patch that conflicts and is recomputed records nothing twice, and a Station write that
 * fails never keeps a run from finishing.
 */
export function recordSpend(c: Ctx, u: RunUsage | undefined, completedAt: string): Action[] {
  const window = windowMs(c.station?.spec.budget?.window);
  if (!c.station || window === undefined || u?.costUsd === undefined || u.costUsd <= 0) return [];
  return [
    {
      id: "record-spend",
      type: "recordSpend",
      station: { namespace: c.ref.namespace, name: c.station.metadata?.name ?? c.agent.spec.stationRef },
      entry: { agent: c.ref.uid, completedAt, costUSD: formatUsd(u.costUsd) },
      windowMs: window,
    },
  ];
}

/**
 * A gateway run's cost is what the gateway metered of its calls, however the run ended: the run's
 * own lines (which the agent writes) are not read for it, nor bounded (docs/gateway.md#metering).
 */
function withMeteredUsage(c: Ctx, t: Terminal): Terminal {
  const metered = c.input.metered;
  if (metered === undefined) return t;
  // The gateway recorded no call although the run's lines report tokens: its records were lost
  // (they could not be written). Billing $0 would make the run free; its own lines are read
  // instead, flagged. Lines that overstate only cost the run itself.
  if (metered.calls === 0 && t.usage !== undefined && totalTokens(t.usage.usage) > 0) {
    return { ...t, costNote: MSG_METERING_MISSING };
  }
  const { costNote: _fromLines, ...rest } = t;
  const unsettled = metered.unsettledCalls ?? 0;
  return {
    ...rest,
    usage: meteredRunUsage(metered, { vendor: metered.vendor, at: c.now, ...pricesOf(c) }),
    ...(unsettled > 0 ? { costNote: msgMeteringUnsettled(unsettled) } : {}),
  };
}

export const MSG_METERING_MISSING =
  "the model gateway recorded no call of this run, but its lines report tokens: its cost is read from its lines (docs/gateway.md#what-the-controller-makes-of-it)";

export const msgMeteringUnsettled = (calls: number) =>
  `the model gateway still had ${calls} call${calls === 1 ? "" : "s"} of this run in flight when the controller stopped waiting for them: their usage is not in the cost`;

/** The terminal patch, its metrics (after the patch) and the history pruning (after the patch). */
export function finish(
  c: Ctx,
  ended: Terminal,
  extraAfterPatch: (dep: string[]) => Action[] = () => [],
): Action[] {
  const t = withMeteredUsage(c, ended);
  const completedAt = rfc3339(c.now);
  const status: PatchStatusAction["status"] = {
    phase: t.phase,
    exitCode: t.exitCode,
    completedAt,
    ...(t.jobName !== undefined ? { jobName: t.jobName } : {}),
    ...(t.output !== undefined ? { output: t.output } : {}),
    ...(t.failureReason !== undefined ? { failureReason: t.failureReason } : {}),
    ...(t.sessionId !== undefined ? { sessionId: t.sessionId } : {}),
    ...(t.prUrl !== undefined ? { prUrl: t.prUrl } : {}),
    ...(t.usage !== undefined ? usageStatus(t.usage) : {}),
    ...(t.costNote !== undefined ? { costNote: t.costNote } : {}),
    ...(t.providerRetries !== undefined ? { providerRetries: t.providerRetries } : {}),
    ...(c.input.egress !== undefined ? { egress: c.input.egress } : {}),
  };
  const dep = ["patch-status"];
  const metrics: Action[] = [
    metric(
      "metric-completed",
      { name: "controller_runs_completed_total", labels: { phase: t.phase, exit_code: String(t.exitCode) } },
      dep,
    ),
  ];
  if (c.startedAt !== undefined) {
    metrics.push(
      metric(
        "metric-duration",
        {
          name: "controller_run_duration_seconds",
          labels: { phase: t.phase },
          value: Math.max(0, (c.now - c.startedAt) / 1000),
        },
        dep,
      ),
    );
  }
  if (t.failureKind) {
    metrics.push(
      metric(
        "metric-failure",
        { name: "controller_run_failures_total", labels: { kind: t.failureKind } },
        dep,
      ),
    );
  }
  if (t.usage !== undefined) metrics.push(...costMetrics(c, t.usage, dep));
  const terminal: Agent = { ...c.agent, status: { ...c.agent.status, phase: t.phase, completedAt } };
  return [
    ...recordSpend(c, t.usage, completedAt),
    patch(c, status),
    ...extraAfterPatch(dep),
    ...egressRefusedEvent(c, dep),
    ...metrics,
    ...prune(c, terminal, dep),
  ];
}

/**
 * What the egress proxy refused the run, to the sinks once, after the terminal patch wrote it into
 * status.egress (docs/gateway.md#egress): each refusal was already a 403 to the program and a
 * Warning Event from the gateway as it happened.
 */
function egressRefusedEvent(c: Ctx, dep: string[]): Action[] {
  const egress = c.input.egress;
  if (egress === undefined || egress.refused === 0) return [];
  const event: EgressEvent = {
    kind: "egress",
    status: "refused",
    refused: egress.refused,
    destinations: egress.destinations ?? [],
  };
  return sinkEvents(c, "event-egress", [{ type: "lifecycle", event }], dep);
}

export function fail(c: Ctx, reason: string, kind: FailureKind): Action[] {
  return finish(c, { phase: "Failed", exitCode: 1, failureReason: reason, failureKind: kind });
}

export function jobMode(c: Ctx): "interactive" | "realtime" {
  return c.execution === "realtime" ? "realtime" : "interactive";
}

export function cancelAction(c: Ctx, id = "cancel-batch"): Action {
  return {
    id,
    type: "cancelBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    batchId: c.batchId as string,
    apiKey: c.apiKey as ApiKeyRef,
  };
}

export function cleanupAction(c: Ctx, dependsOn?: string[]): Action {
  return {
    id: "cleanup-batch",
    type: "cleanupBatch",
    agent: c.ref,
    provider: c.provider as BatchProviderName,
    batchId: c.batchId as string,
    apiKey: c.apiKey as ApiKeyRef,
    ...(dependsOn ? { dependsOn } : {}),
  };
}

export function removeFinalizer(c: Ctx, dependsOn?: string[], id = "remove-finalizer"): Action {
  return {
    id,
    type: "removeFinalizer",
    agent: c.ref,
    finalizer: BATCH_CLEANUP_FINALIZER,
    index: c.finalizerIndex,
    ...(dependsOn ? { dependsOn } : {}),
  };
}
