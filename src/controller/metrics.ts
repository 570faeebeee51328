/**
 * The controller's /metrics (docs/controller.md#metrics), on a Registry of
 * its own so nothing else in the process can add or clash with series. Every number is this
 * process's state: a restart starts them from zero (a counter reset to Prometheus).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { MetricObservation } from "../core/actions.js";

export const AGENT_PHASES = ["Pending", "Running", "Succeeded", "Failed"] as const;
export const SINK_OUTCOMES = ["delivered", "failed", "dropped"] as const;

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly resyncs = new Counter({
    name: "controller_resyncs_total",
    help: "Full paginated LISTs of the Agent collection (initial sync, poll, re-list after 410).",
    registers: [this.registry],
  });
  readonly watchReconnects = new Counter({
    name: "controller_watch_reconnects_total",
    help: "Times a watch stream ended (server timeout, error or 410) and was re-opened.",
    registers: [this.registry],
  });
  readonly agents = new Gauge({
    name: "controller_agents",
    help: "Agents in each phase at the last poll.",
    labelNames: ["phase"],
    registers: [this.registry],
  });
  readonly runsCompleted = new Counter({
    name: "controller_runs_completed_total",
    help: "Terminal transitions, by phase and exit code.",
    labelNames: ["phase", "exit_code"],
    registers: [this.registry],
  });
  readonly runDuration = new Histogram({
    name: "controller_run_duration_seconds",
    help: "Time from status.startedAt to the terminal patch.",
    labelNames: ["phase"],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400],
    registers: [this.registry],
  });
  readonly runQueue = new Histogram({
    name: "controller_run_queue_seconds",
    help: "Wait from an Agent's creationTimestamp to its Job (time behind the Station's concurrency limit).",
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });
  readonly runFailures = new Counter({
    name: "controller_run_failures_total",
    help: "Runs that ended with a reason, by kind (missing_ref, job_failed, output_unavailable, preempted, ...).",
    labelNames: ["kind"],
    registers: [this.registry],
  });
  readonly batchCleanupFailures = new Counter({
    name: "controller_batch_cleanup_failures_total",
    help: "Failed attempts to delete a batch run's provider-side objects.",
    registers: [this.registry],
  });
  // Beyond the seed's eight: what a platform team alerts on (docs/decisions.md D-117, components/monitoring).
  readonly reconcileErrors = new Counter({
    name: "controller_reconcile_errors_total",
    help: "Reconciles that threw (an API or provider call failed); each is retried after 1 s.",
    registers: [this.registry],
  });
  readonly sinkDeliveries = new Counter({
    name: "controller_sink_deliveries_total",
    help: "Sink events the controller sent for batch runs, by outcome (delivered, failed after retries, dropped from a full queue).",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  // Cost (docs/cost-and-budgets.md): one increment per finished run, after its terminal patch.
  readonly runTokens = new Counter({
    name: "controller_run_tokens_total",
    help: "Tokens finished runs used, by Station, model, execution and type (input, output, cache_read, cache_write).",
    labelNames: ["station", "model", "execution", "type"],
    registers: [this.registry],
  });
  readonly runCost = new Counter({
    name: "controller_run_cost_usd_total",
    help: "US dollars finished runs cost (the CLI's figure, else the controller's price table), by Station, model and execution.",
    labelNames: ["station", "model", "execution"],
    registers: [this.registry],
  });

  readonly runUnpricedModels = new Counter({
    name: "controller_run_unpriced_models_total",
    help: "Finished runs that used a model the price table has no price for (priced at the vendor's highest known rates), by Station and model.",
    labelNames: ["station", "model"],
    registers: [this.registry],
  });

  readonly priceOverrideErrors = new Counter({
    name: "controller_price_override_errors_total",
    help: "Entries of the price-override ConfigMap refused (each also a PriceOverrideRefused Event on the ConfigMap).",
    registers: [this.registry],
  });

  constructor() {
    // Known label values start at zero, so dashboards see the series before the first event.
    for (const phase of AGENT_PHASES) this.agents.set({ phase }, 0);
    for (const kind of ["missing_ref", "job_failed", "output_unavailable", "preempted"]) {
      this.runFailures.inc({ kind }, 0);
    }
    for (const outcome of SINK_OUTCOMES) this.sinkDeliveries.inc({ outcome }, 0);
  }

  /** Sets controller_agents from a full view of the cache. */
  setPhaseCounts(phases: Iterable<string>): void {
    const counts = new Map<string, number>(AGENT_PHASES.map((p) => [p, 0]));
    for (const p of phases) counts.set(p, (counts.get(p) ?? 0) + 1);
    for (const [phase, n] of counts) this.agents.set({ phase }, n);
  }

  /** Applies one observation from a recordMetric action. */
  record(m: MetricObservation): void {
    switch (m.name) {
      case "controller_runs_completed_total":
        this.runsCompleted.inc(m.labels);
        return;
      case "controller_run_duration_seconds":
        this.runDuration.observe(m.labels, m.value);
        return;
      case "controller_run_queue_seconds":
        this.runQueue.observe(m.value);
        return;
      case "controller_run_failures_total":
        this.runFailures.inc(m.labels);
        return;
      case "controller_batch_cleanup_failures_total":
        this.batchCleanupFailures.inc();
        return;
      case "controller_run_tokens_total":
        this.runTokens.inc(m.labels, m.value);
        return;
      case "controller_run_cost_usd_total":
        this.runCost.inc(m.labels, m.value);
        return;
      case "controller_run_unpriced_models_total":
        this.runUnpricedModels.inc(m.labels);
        return;
    }
  }
}
