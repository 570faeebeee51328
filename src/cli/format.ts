/** How the plugin prints Agents: kubectl's -o json|yaml|name, a detail view and a table. Pure. */

import { stringify } from "yaml";
import type { Agent } from "../../generated/crds/agent.js";
import { phaseOf, queuePlaceOf, reasonOf } from "../client/terminal.js";
import type { ProviderLimitEvent } from "../core/provider-limits/retry-event.js";
import type { OutputFormat } from "./args.js";
import { oneLine, providerWaitLine } from "./render-output.js";

/** kubectl's `-o name` form: `<resource>.<group>/<name>`. */
export function resourceName(agent: Agent): string {
  return `agent.agents.re-cinq.com/${agent.metadata.name ?? ""}`;
}

/** Objects as `-o` asks: one JSON document (a List for several), YAML documents, or names. */
export function formatObjects(objects: readonly Agent[], format: OutputFormat, asList: boolean): string {
  if (format === "name") return objects.map((o) => `${resourceName(o)}\n`).join("");
  const value = asList
    ? { apiVersion: "v1", kind: "List", items: objects, metadata: { resourceVersion: "" } }
    : objects[0];
  return format === "json" ? `${JSON.stringify(value, null, 4)}\n` : stringify(value);
}

/** A plain value as JSON or YAML (prompt and close replies). */
export function formatValue(value: unknown, format: "json" | "yaml"): string {
  return format === "json" ? `${JSON.stringify(value, null, 4)}\n` : stringify(value);
}

export function queueText(agent: Agent): string {
  const place = queuePlaceOf(agent);
  if (!place) return "";
  return place.waiting === undefined
    ? `beyond position ${place.position}`
    : `${place.position} of ${place.waiting}`;
}

/**
 * The run's cost and tokens as the controller recorded them (status.costUSD, status.costSource,
 * status.usage; docs/cost-and-budgets.md), never recomputed from the output text. An estimate
 * says so: `$0.0106 estimated (3 in / 24 out tokens)`.
 */
function costText(agent: Agent): string {
  const s = agent.status ?? {};
  const u = s.usage;
  const cache =
    u && (u.cacheReadTokens || u.cacheWriteTokens)
      ? ` / ${u.cacheReadTokens ?? 0} cache read / ${u.cacheWriteTokens ?? 0} cache write`
      : "";
  const tokens = u ? `${u.inputTokens ?? 0} in / ${u.outputTokens ?? 0} out${cache} tokens` : "";
  const money =
    s.costUSD !== undefined
      ? `$${s.costUSD}${s.costSource === "estimated" ? " estimated" : ""}`
      : s.costSource === "unpriced"
        ? "unpriced"
        : "";
  if (money === "") return tokens;
  return tokens === "" ? money : `${money} (${tokens})`;
}

/** The table's COST cell: the figure alone, `~` marking an estimate. */
function costCell(agent: Agent): string {
  const s = agent.status ?? {};
  if (s.costUSD === undefined) return s.costSource === "unpriced" ? "unpriced" : "-";
  return `${s.costSource === "estimated" ? "~" : ""}$${s.costUSD}`;
}

/** `2 (waited 12 s; last: anthropic 529 at 2026-…)`: the waits for a provider that limited the run. */
function providerRetriesText(r: NonNullable<Agent["status"]>["providerRetries"]): string {
  if (!r || r.count === 0) return "";
  const last = r.last
    ? `; last: ${r.last.provider} ${r.last.status === 0 ? "no answer" : r.last.status} at ${r.last.at}`
    : "";
  return `${r.count} (waited ${r.waitedSeconds} s${last})`;
}

/**
 * `kubectl agent status AGENT`: one field a line, empty ones left out (the first four always).
 * `lastWait`: a running run's last wait for its provider, read from its pod's log.
 */
export function formatAgentDetail(agent: Agent, lastWait?: ProviderLimitEvent): string {
  const s = agent.status ?? {};
  const rows: [string, string | number | undefined][] = [
    ["Name", agent.metadata.name],
    ["Namespace", agent.metadata.namespace],
    ["Station", agent.spec?.stationRef],
    ["Phase", phaseOf(agent)],
    ["Queue", queueText(agent)],
    ["Reason", reasonOf(agent)],
    ["Job", s.jobName],
    [
      "Batch",
      s.batchId
        ? `${s.batchProvider ?? ""} ${s.batchId}${s.batchFallback ? " (fell back to a Job)" : ""}`.trim()
        : "",
    ],
    ["Started", s.startedAt],
    ["Completed", s.completedAt],
    ["Exit code", s.exitCode],
    ["Cost", costText(agent)],
    [
      "Cost note",
      [
        s.costReportRejected !== undefined
          ? `the run reported $${s.costReportRejected}, more than its tokens can cost: not believed`
          : "",
        s.costNote ?? "",
      ]
        .filter((t) => t !== "")
        .join("; "),
    ],
    ["Provider retries", providerRetriesText(s.providerRetries)],
    [
      "Last provider wait",
      lastWait ? `${providerWaitLine(lastWait).replace(/^\[provider limit\] /, "")} (at ${lastWait.at})` : "",
    ],
    ["Session", s.sessionId],
    ["PR", s.prUrl],
  ];
  return rows
    .filter(([, value], i) => i < 4 || (value !== undefined && value !== ""))
    .map(([label, value]) =>
      `${`${label}:`.padEnd(label.length > 10 ? label.length + 1 : 11)} ${value ?? ""}`.trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

/** kubectl's AGE column: 45s, 12m, 5h, 3d. */
export function age(since: string | undefined, now: number): string {
  if (!since) return "<unknown>";
  const seconds = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** Columns padded to their widest cell, three spaces apart, as kubectl prints tables. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + 3)))
        .join("")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

/** `kubectl agent status [--station S]`: one row per run. */
export function formatAgentTable(agents: readonly Agent[], now: number): string {
  const header = ["NAME", "STATION", "PHASE", "QUEUE", "EXIT", "COST", "SESSION", "AGE", "REASON"];
  const rows = agents.map((a) => [
    a.metadata.name ?? "",
    a.spec?.stationRef ?? "",
    phaseOf(a),
    queueText(a) || "-",
    a.status?.exitCode === undefined ? "-" : String(a.status.exitCode),
    costCell(a),
    a.status?.sessionId || "-",
    age(a.metadata.creationTimestamp, now),
    oneLine(reasonOf(a), 60) || "-",
  ]);
  return table([header, ...rows]);
}
