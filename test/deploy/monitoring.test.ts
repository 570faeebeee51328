/**
 * components/monitoring: every alert expression and dashboard query names only series the
 * controller really exports, with labels those metrics carry. The names come from the
 * controller's own Registry (src/controller/metrics.ts), not from a copy kept here.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Registry } from "prom-client";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ControllerMetrics } from "../../src/controller/metrics.js";
import { findObject, type K8sObject, REPO_ROOT, renderInstall } from "./render.js";

const COMPONENT = join(REPO_ROOT, "deploy/components/monitoring");

interface Selector {
  metric: string;
  labels: string[];
}

interface QueryNames {
  selectors: Selector[];
  /** Label names in by / without / on / ignoring / group_left / group_right lists. */
  grouping: string[];
}

/** Operators and aggregations: reserved words, never metric names (`sum by (x) (…)` has no `(` after sum). */
const KEYWORDS = new Set([
  ...["and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"],
  ...[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
  ],
]);
const GROUPING = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

/**
 * The metric names and label names one PromQL expression mentions. A small lexer, enough for
 * the expressions we ship: strings, numbers, durations and range brackets are skipped; an
 * identifier followed by `(` is a function or aggregation, unless it is a grouping keyword,
 * whose parenthesised list is label names; any other identifier that is not an operator keyword
 * is a metric name, and its `{…}` holds label matchers.
 */
function promqlNames(expr: string): QueryNames {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i] ?? "")) i++;
  };
  const ident = () => {
    const m = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(expr.slice(i));
    if (!m) return undefined;
    i += m[0].length;
    return m[0];
  };
  const skipString = () => {
    const quote = expr[i];
    i++;
    while (i < expr.length && expr[i] !== quote) i += expr[i] === "\\" ? 2 : 1;
    i++;
  };
  const labelList = (): string[] => {
    const names: string[] = [];
    i++; // (
    for (skipSpace(); i < expr.length && expr[i] !== ")"; skipSpace()) {
      const name = ident();
      if (name) names.push(name);
      else i++;
    }
    i++;
    return names;
  };
  const matchers = (): string[] => {
    const names: string[] = [];
    i++; // {
    for (skipSpace(); i < expr.length && expr[i] !== "}"; skipSpace()) {
      const c = expr[i] ?? "";
      if (c === '"' || c === "'" || c === "`") skipString();
      else if (/[A-Za-z_]/.test(c)) names.push(ident() ?? "");
      else i++;
    }
    i++;
    return names;
  };
  while (i < expr.length) {
    const c = expr[i] ?? "";
    if (c === '"' || c === "'" || c === "`") {
      skipString();
    } else if (c === "[") {
      i = expr.indexOf("]", i) + 1;
    } else if (/[0-9.]/.test(c)) {
      while (i < expr.length && /[A-Za-z0-9_.]/.test(expr[i] ?? "")) i++;
    } else if (/[A-Za-z_:]/.test(c)) {
      const name = ident() ?? "";
      skipSpace();
      if (GROUPING.has(name)) {
        if (expr[i] === "(") grouping.push(...labelList());
      } else if (expr[i] === "(" || KEYWORDS.has(name.toLowerCase())) {
        // function, aggregation or operator
      } else {
        selectors.push({ metric: name, labels: expr[i] === "{" ? matchers() : [] });
      }
    } else if (c === "{") {
      selectors.push({ metric: "", labels: matchers() });
    } else {
      i++;
    }
  }
  return { selectors, grouping };
}

interface Exported {
  /** Series name → the label names it may carry. */
  series: Map<string, Set<string>>;
  /** Metric family names as registered. */
  families: string[];
}

/** What the controller's Registry exports: histograms as their _bucket, _sum and _count series. */
function exportedSeries(registry: Registry): Exported {
  const series = new Map<string, Set<string>>();
  const families: string[] = [];
  for (const metric of registry.getMetricsAsArray()) {
    const m = metric as unknown as { name: string; labelNames?: string[]; constructor: { name: string } };
    families.push(m.name);
    const labels = new Set(m.labelNames ?? []);
    if (m.constructor.name === "Histogram") {
      series.set(`${m.name}_bucket`, new Set([...labels, "le"]));
      series.set(`${m.name}_sum`, labels);
      series.set(`${m.name}_count`, labels);
    } else {
      series.set(m.name, labels);
    }
  }
  return { series, families: families.sort() };
}

/** Labels every scraped series gets from Prometheus itself or the PodMonitor's target labels. */
const TARGET_LABELS = new Set(["instance", "job", "namespace", "pod", "container", "endpoint"]);

let exported: Exported;
let rules: { alert?: string; expr: string }[];
let dashboard: { panels: { title: string; targets: { expr: string }[] }[] };
let rendered: K8sObject[];

beforeAll(async () => {
  exported = exportedSeries(new ControllerMetrics().registry);
  const rule = parse(await readFile(join(COMPONENT, "prometheus-rule.yaml"), "utf8"));
  rules = rule.spec.groups.flatMap((g: { rules: unknown[] }) => g.rules);
  dashboard = JSON.parse(await readFile(join(COMPONENT, "agent-controller-dashboard.json"), "utf8"));
  rendered = await renderInstall(["monitoring"]);
}, 60_000);

function unknownNames(expr: string): string[] {
  const { selectors, grouping } = promqlNames(expr);
  const problems: string[] = [];
  const allLabels = new Set(TARGET_LABELS);
  for (const s of selectors) {
    const labels = exported.series.get(s.metric);
    if (!labels) {
      problems.push(`metric ${s.metric || "{…}"} is not exported by the controller`);
      continue;
    }
    for (const l of labels) allLabels.add(l);
    for (const l of s.labels) {
      if (!labels.has(l) && !TARGET_LABELS.has(l)) problems.push(`${s.metric} has no label ${l}`);
    }
  }
  for (const l of grouping)
    if (!allLabels.has(l)) problems.push(`no metric in the expression has label ${l}`);
  return problems;
}

describe("promqlNames (the checker itself)", () => {
  it.each([
    [
      'sum by (kind) (increase(controller_run_failures_total{kind!="job_failed"}[1h])) > 5',
      { selectors: [{ metric: "controller_run_failures_total", labels: ["kind"] }], grouping: ["kind"] },
    ],
    [
      "max(a_total and on(instance) (rate(b_total[5m]) > 0)) > 0 and (sum(c) or vector(0)) == 0",
      {
        selectors: [
          { metric: "a_total", labels: [] },
          { metric: "b_total", labels: [] },
          { metric: "c", labels: [] },
        ],
        grouping: ["instance"],
      },
    ],
    [
      'histogram_quantile(0.95, sum by (le, phase) (rate(x_bucket{phase=~"S.*"}[30m])))',
      { selectors: [{ metric: "x_bucket", labels: ["phase"] }], grouping: ["le", "phase"] },
    ],
  ])("%s", (expr, names) => {
    expect(promqlNames(expr)).toEqual(names);
  });

  it("reports a metric the controller does not export and a label it does not carry", () => {
    expect(unknownNames('rate(controller_sink_failures_total[5m]) + controller_agents{state="x"}')).toEqual([
      "metric controller_sink_failures_total is not exported by the controller",
      "controller_agents has no label state",
    ]);
  });
});

describe("the PrometheusRule", () => {
  it("has the alerts a platform team needs", () => {
    expect(rules.map((r) => r.alert)).toEqual([
      "AgentControllerAbsent",
      "AgentControllerNoLeader",
      "AgentRunsStuckPending",
      "AgentRunsStuckRunning",
      "AgentBatchCleanupFailing",
      "AgentRunFailuresRising",
      "AgentControllerWatchUnstable",
      "AgentReconcileErrors",
      "AgentSinkDeliveriesFailing",
      "AgentStationSpendHigh",
    ]);
  });

  it("names only metrics and labels the controller registers", () => {
    for (const r of rules) expect(unknownNames(r.expr), r.alert).toEqual([]);
  });
});

describe("the Grafana dashboard", () => {
  it("queries only metrics and labels the controller registers", () => {
    for (const p of dashboard.panels) {
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets) expect(unknownNames(t.expr), `${p.title}: ${t.expr}`).toEqual([]);
    }
  });

  it("shows every metric the controller registers", () => {
    const family = (series: string) =>
      exported.families.find((f) => series === f || series.replace(/_(bucket|sum|count)$/, "") === f);
    const shown = new Set(
      dashboard.panels.flatMap((p) =>
        p.targets.flatMap((t) => promqlNames(t.expr).selectors.map((s) => family(s.metric))),
      ),
    );
    expect([...shown].sort()).toEqual(exported.families);
    expect(exported.families).toHaveLength(14);
  });
});

describe("components/monitoring rendered", () => {
  it("ships the rule, a PodMonitor on the health port, and the dashboard in a Grafana-sidecar ConfigMap", async () => {
    expect(findObject(rendered, "PrometheusRule", "agent-controller").metadata.namespace).toBe("ai-agents");
    const monitor = findObject(rendered, "PodMonitor", "agent-controller");
    const deployment = findObject(rendered, "Deployment", "agent-controller");
    expect(monitor.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const ports = deployment.spec.template.spec.containers[0].ports as { name: string }[];
    expect(ports.map((p) => p.name)).toContain(monitor.spec.podMetricsEndpoints[0].port);
    const cm = findObject(rendered, "ConfigMap", "agent-controller-dashboard");
    expect(cm.metadata.labels?.grafana_dashboard).toBe("1");
    expect(cm.data["agent-controller-dashboard.json"]).toBe(
      await readFile(join(COMPONENT, "agent-controller-dashboard.json"), "utf8"),
    );
  });
});
