/**
 * The soak's report (docs/soak.md#the-report): pure, from what the runner recorded. The JSON has
 * the totals as top-level numbers `agents`, `faults` and `violations`; `table()` gives the short
 * table the runner prints.
 */

import { INVARIANTS, type InvariantName, type Violation } from "./invariants.js";
import { type Fault, faultsAround } from "./schedule.js";

/** One controller log line with the runtime's timestamp (`pods/log?timestamps=true`). */
export interface LogLine {
  pod: string;
  at: number;
  text: string;
}

/** A fault as the runner fired it. */
export interface Injection {
  fault: Fault;
  /** Milliseconds from the soak's start when it fired. */
  firedAt: number;
  /** What it hit (the pod's name, the provider), or why it was skipped. */
  outcome: string;
  skipped: boolean;
}

export interface ReportInput {
  seed: number;
  startedAt: number;
  endedAt: number;
  load: { start: number[]; end: number[] };
  schedule: readonly Fault[];
  injections: readonly Injection[];
  created: number;
  /** Create to terminal, ms, per Agent that reached a terminal phase. */
  toTerminalMs: readonly number[];
  violations: readonly Violation[];
  logs: readonly LogLine[];
  /** The parts of the mix and the fault kinds this run did not have (docs/soak.md#not-yet). */
  notYet: readonly string[];
}

/** How far around a violation the report looks for faults and log lines. */
export const AROUND_MS = 60_000;
export const LOG_AROUND_MS = 15_000;
const MAX_LOG_LINES = 40;

export const percentile = (xs: readonly number[], p: number): number | null => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? (s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number)
    : null;
};

/** The controller log lines within `marginMs` of `at`, oldest first, at most MAX_LOG_LINES. */
export function logLinesAround(lines: readonly LogLine[], at: number, marginMs: number): LogLine[] {
  return lines
    .filter((l) => Math.abs(l.at - at) <= marginMs)
    .sort((a, b) => a.at - b.at)
    .slice(-MAX_LOG_LINES);
}

/** A log as `pods/log?timestamps=true` answers it: each line starts with an RFC 3339 time. */
export function parseTimestampedLog(pod: string, text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of text.split("\n")) {
    const space = line.indexOf(" ");
    const at = Date.parse(line.slice(0, space));
    if (space < 0 || Number.isNaN(at)) continue;
    out.push({ pod, at, text: line.slice(space + 1) });
  }
  return out;
}

export function buildReport(r: ReportInput) {
  const minutes = (r.endedAt - r.startedAt) / 60_000;
  const fired = r.injections.filter((i) => !i.skipped);
  const byKind: Record<string, number> = {};
  for (const i of fired) byKind[i.fault.kind] = (byKind[i.fault.kind] ?? 0) + 1;
  const counts = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<InvariantName, number>;
  for (const v of r.violations) counts[v.invariant] += 1;
  return {
    mode: "soak",
    seed: r.seed,
    at: new Date(r.startedAt).toISOString(),
    minutes: Number(minutes.toFixed(2)),
    load: r.load,
    agents: r.created,
    faults: fired.length,
    violations: r.violations.length,
    terminal: r.toTerminalMs.length,
    runsPerMinute: minutes > 0 ? Number((r.toTerminalMs.length / minutes).toFixed(2)) : 0,
    toTerminalMs: { p50: percentile(r.toTerminalMs, 50), p99: percentile(r.toTerminalMs, 99) },
    faultsByKind: byKind,
    skippedFaults: r.injections.filter((i) => i.skipped).length,
    invariants: counts,
    violationList: r.violations.map((v) => {
      const sinceStart = v.at - r.startedAt;
      return {
        ...v,
        atSeconds: Number((sinceStart / 1000).toFixed(1)),
        faultsAround: faultsAround(
          r.schedule,
          v.since === undefined ? sinceStart : v.since - r.startedAt,
          sinceStart,
          AROUND_MS,
        ),
        controllerLog: logLinesAround(r.logs, v.at, LOG_AROUND_MS).map(
          (l) => `${new Date(l.at).toISOString()} ${l.pod} ${l.text}`,
        ),
      };
    }),
    injections: r.injections.map((i) => ({
      kind: i.fault.kind,
      plannedAtSeconds: Number((i.fault.at / 1000).toFixed(1)),
      firedAtSeconds: Number((i.firedAt / 1000).toFixed(1)),
      target: i.fault.target,
      params: i.fault.params,
      outcome: i.outcome,
      skipped: i.skipped,
    })),
    notYet: r.notYet,
  };
}

export type SoakReport = ReturnType<typeof buildReport>;

/** The short table: label, value. */
export function table(report: SoakReport): string[][] {
  const rows: string[][] = [
    ["figure", "value"],
    ["seed", String(report.seed)],
    ["Agents created / terminal", `${report.agents} / ${report.terminal}`],
    ["minutes, runs per minute", `${report.minutes}, ${report.runsPerMinute}`],
    ["create → terminal p50 / p99 (s)", `${sec(report.toTerminalMs.p50)} / ${sec(report.toTerminalMs.p99)}`],
    ["faults injected (skipped)", `${report.faults} (${report.skippedFaults})`],
    ...Object.entries(report.faultsByKind)
      .sort()
      .map(([k, n]) => [`  fault ${k}`, String(n)]),
    ["violations", String(report.violations)],
    ...Object.entries(report.invariants).map(([k, n]) => [`  invariant ${k}`, String(n)]),
  ];
  for (const v of report.violationList) {
    rows.push([`VIOLATION ${v.invariant} ${v.agent} at +${v.atSeconds} s`, v.detail]);
    for (const f of v.faultsAround)
      rows.push(["    fault around", `+${(f.at / 1000).toFixed(1)} s ${f.kind} ${f.target}`]);
    for (const line of v.controllerLog.slice(-5)) rows.push(["    controller log", line.slice(0, 160)]);
  }
  return rows;
}

const sec = (ms: number | null) => (ms === null ? "-" : (ms / 1000).toFixed(1));
