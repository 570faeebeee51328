/**
 * The rows of the state machine's themed tests (src/core/state-machine/reconcile.ts*.test.ts): one row per
 * case, stating its input, the rules that fire and the actions they decide, and the expected
 * actions written with the builders below. `describeRules` runs a group's rows and checks that
 * every rule of the group is exercised by one of them.
 */
import { describe, expect, it } from "vitest";
import type { Action } from "../../src/core/actions.js";
import type { ReconcileInput } from "../../src/core/input.js";
import { decide, type Rule, reconcile } from "../../src/core/state-machine/reconcile.js";
import { agent, definition, input, iso, NS, T0 } from "./core-builders.js";

export const NOW = T0 + 60_000;
export const NOW_ISO = iso(NOW);
export const REF = { namespace: NS, name: "run-1", uid: "uid-run-1" };
export const FIN = "agents.re-cinq.com/batch-cleanup";
export const KEY = { secretName: "agent-secrets", secretKey: "anthropic-key" };
export const SINK = [{ type: "http", url: "https://sink.example/hook" }];
export const SOURCE = { agent: "run-1", station: "st", namespace: NS };

/** Jobs are pinned in job-builder.test.ts; here only their name matters. */
export function summarize(actions: Action[]): unknown[] {
  return actions.map((a) => (a.type === "createJob" ? { ...a, job: a.job.metadata?.name } : a));
}

export const patch = (status: Record<string, unknown>, extra: Partial<Action> = {}) => ({
  id: "patch-status",
  type: "patchStatus",
  agent: REF,
  resourceVersion: "100",
  status,
  ...extra,
});
export const completed = (phase: string, exit: string) => ({
  id: "metric-completed",
  type: "recordMetric",
  metric: { name: "controller_runs_completed_total", labels: { phase, exit_code: exit } },
  dependsOn: ["patch-status"],
});
export const duration = (phase: string, value: number) => ({
  id: "metric-duration",
  type: "recordMetric",
  metric: { name: "controller_run_duration_seconds", labels: { phase }, value },
  dependsOn: ["patch-status"],
});
export const failure = (kind: string) => ({
  id: "metric-failure",
  type: "recordMetric",
  metric: { name: "controller_run_failures_total", labels: { kind } },
  dependsOn: ["patch-status"],
});
export const failedAtPending = (reason: string, kind: string) => [
  patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: reason }),
  completed("Failed", "1"),
  failure(kind),
];
export const events = (id: string, items: unknown[], vendor = "claude") => ({
  id,
  type: "emitSinkEvents",
  agent: REF,
  source: SOURCE,
  sinks: SINK,
  select: [],
  vendor,
  items,
  dependsOn: ["patch-status"],
});
export const lifecycle = (status: string, extra: Record<string, unknown> = {}) => ({
  type: "lifecycle",
  event: { kind: "lifecycle", phase: "agent", status, ...extra },
});

export const batchDef = () => definition().batch();
export const inFlight = (extra: Record<string, unknown> = {}) =>
  agent()
    .finalizers(FIN)
    .status({
      phase: "Running",
      batchId: "msgbatch_1",
      batchProvider: "anthropic",
      startedAt: iso(T0),
      ...extra,
    });
export const ended = (outcome: "succeeded" | "failed", failureReason?: string) => ({
  state: "ended" as const,
  outcome,
  lines: ['{"type":"system","subtype":"init"}', '{"type":"result","is_error":false}'],
  ...(failureReason ? { failureReason } : {}),
});
export const cliItems = [
  { type: "cliLine", line: '{"type":"system","subtype":"init"}' },
  { type: "cliLine", line: '{"type":"result","is_error":false}' },
];
export const OUTPUT = '{"type":"system","subtype":"init"}\n{"type":"result","is_error":false}';
export const DAY = 24 * 3600_000;

export interface Row {
  name: string;
  in: Partial<ReconcileInput>;
  rules: string[];
  actions: unknown[];
}

export const RECORDED = {
  keyRef: "anthropic-key",
  model: "claude-sonnet-4-6",
  timeoutMinutes: 1440,
  onTimeout: "fail",
};
export const OPENAI_KEY = { secretName: "agent-secrets", secretKey: "openai-key" };
export const JOB = "agent-job-run-1";

/** A provider call on the batch `inFlight` records. */
const batchCall = (id: string, type: string) => ({
  id,
  type,
  agent: REF,
  provider: "anthropic",
  batchId: "msgbatch_1",
  apiKey: KEY,
});
export const pollAction = {
  ...batchCall("poll-batch", "pollBatch"),
  ctx: { agentUid: "uid-run-1", model: "claude-sonnet-4-6" },
};
export const cancelAction = batchCall("cancel-batch", "cancelBatch");
export const cleanupAction = batchCall("cleanup-batch", "cleanupBatch");
export const createJobAction = (extra: Record<string, unknown> = {}) => ({
  id: "create-job",
  type: "createJob",
  agent: REF,
  job: JOB,
  ...extra,
});
/** Removes FIN by its index in the Agent's finalizers: 0 where it is the only one. */
export const removeFinalizerAction = (extra: Record<string, unknown> = {}) => ({
  id: "remove-finalizer",
  type: "removeFinalizer",
  agent: REF,
  finalizer: FIN,
  index: 0,
  ...extra,
});

/** The rules a group module exports (its named rule constants). */
export function rulesOf(group: Record<string, unknown>): Rule[] {
  return Object.values(group).filter(
    (v): v is Rule => typeof v === "object" && v !== null && "guard" in v && "act" in v,
  );
}

/** Runs each row through `decide` and checks the group's rules are all exercised by its rows. */
export function describeRules(title: string, rows: Row[], group: Record<string, unknown>): void {
  describe(title, () => {
    it.each(rows)("$name", (row) => {
      const d = decide(input({ now: NOW, ...row.in }));
      expect(d.rules).toEqual(row.rules);
      expect(summarize(d.actions)).toEqual(row.actions);
    });

    it("every rule of the group is exercised by a row", () => {
      const covered = new Set(rows.flatMap((r) => r.rules));
      const missing = rulesOf(group)
        .map((r) => r.id)
        .filter((id) => !covered.has(id));
      expect(missing).toEqual([]);
    });

    it("action ids are unique within one result", () => {
      for (const row of rows) {
        const ids = reconcile(input({ now: NOW, ...row.in })).map((a) => a.id);
        expect(new Set(ids).size).toBe(ids.length);
      }
    });
  });
}
