import { describe, expect, it } from "vitest";
import { ControllerMetrics } from "./metrics.js";

describe("ControllerMetrics", () => {
  it("exposes exactly the seed's eight metrics plus the reconcile-error, sink-delivery and cost counters", async () => {
    const m = new ControllerMetrics();
    const json = await m.registry.getMetricsAsJSON();
    expect(Object.fromEntries(json.map((x) => [x.name, x.type]))).toEqual({
      controller_resyncs_total: "counter",
      controller_watch_reconnects_total: "counter",
      controller_agents: "gauge",
      controller_runs_completed_total: "counter",
      controller_run_duration_seconds: "histogram",
      controller_run_queue_seconds: "histogram",
      controller_run_failures_total: "counter",
      controller_batch_cleanup_failures_total: "counter",
      controller_reconcile_errors_total: "counter",
      controller_sink_deliveries_total: "counter",
      controller_run_tokens_total: "counter",
      controller_run_cost_usd_total: "counter",
      controller_run_unpriced_models_total: "counter",
      controller_price_override_errors_total: "counter",
    });
  });

  it("records observations from the core's recordMetric actions with their labels", async () => {
    const m = new ControllerMetrics();
    m.record({ name: "controller_runs_completed_total", labels: { phase: "Failed", exit_code: "3" } });
    m.record({ name: "controller_run_duration_seconds", labels: { phase: "Failed" }, value: 42 });
    m.record({ name: "controller_run_queue_seconds", value: 1.5 });
    m.record({ name: "controller_run_failures_total", labels: { kind: "job_failed" } });
    m.record({ name: "controller_batch_cleanup_failures_total" });
    const text = await m.registry.metrics();
    expect(text).toContain('controller_runs_completed_total{phase="Failed",exit_code="3"} 1');
    expect(text).toContain('controller_run_duration_seconds_count{phase="Failed"} 1');
    expect(text).toContain('controller_run_duration_seconds_sum{phase="Failed"} 42');
    expect(text).toContain("controller_run_queue_seconds_sum 1.5");
    expect(text).toContain('controller_run_failures_total{kind="job_failed"} 1');
    expect(text).toContain('controller_run_failures_total{kind="preempted"} 0');
    expect(text).toContain("controller_batch_cleanup_failures_total 1");
  });

  it("adds a finished run's tokens by type and its cost to the counters of its Station, model and execution", async () => {
    const m = new ControllerMetrics();
    const base = { station: "st", model: "gpt-5-mini", execution: "realtime" as const };
    m.record({ name: "controller_run_tokens_total", labels: { ...base, type: "input" }, value: 120 });
    m.record({ name: "controller_run_tokens_total", labels: { ...base, type: "input" }, value: 30 });
    m.record({ name: "controller_run_cost_usd_total", labels: base, value: 0.25 });
    m.record({ name: "controller_run_cost_usd_total", labels: base, value: 0.5 });
    const text = await m.registry.metrics();
    expect(text).toContain(
      'controller_run_tokens_total{station="st",model="gpt-5-mini",execution="realtime",type="input"} 150',
    );
    expect(text).toContain(
      'controller_run_cost_usd_total{station="st",model="gpt-5-mini",execution="realtime"} 0.75',
    );
  });

  it("sets controller_agents per phase, zeroing phases that emptied", async () => {
    const m = new ControllerMetrics();
    m.setPhaseCounts(["Running", "Running", "Pending"]);
    m.setPhaseCounts(["Succeeded", "Running"]);
    const text = await m.registry.metrics();
    expect(text).toContain('controller_agents{phase="Pending"} 0');
    expect(text).toContain('controller_agents{phase="Running"} 1');
    expect(text).toContain('controller_agents{phase="Succeeded"} 1');
    expect(text).toContain('controller_agents{phase="Failed"} 0');
  });
});
