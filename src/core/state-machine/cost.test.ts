/**
 * The cost read-back per execution through the rule tables (docs/cost-and-budgets.md): what the
 * terminal patch writes and which cost metrics follow it, for batch, batch fallback and realtime
 * runs, as `builders.ts` writes them (the interactive case and the budget rule are rows of
 * running-job.test.ts and pending.test.ts).
 */
import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, station, T0 } from "../../../test/support/core-builders.js";
import type { Action, PatchStatusAction } from "../actions.js";
import type { ReconcileInput } from "../input.js";
import { formatUsd } from "../pricing/estimate.js";
import { runBoundUsd, runTokenBound } from "../pricing/run-bound.js";
import { type LogFacts, meterText } from "../readback/log-meter.js";
import { decide } from "./reconcile.js";

const NOW = T0 + 60_000;
const j = (o: unknown) => JSON.stringify(o);

function terminal(over: Partial<ReconcileInput>) {
  const d = decide(input({ now: NOW, ...over }));
  const patch = d.actions.find((a): a is PatchStatusAction => a.type === "patchStatus");
  const metrics = d.actions
    .filter((a): a is Extract<Action, { type: "recordMetric" }> => a.type === "recordMetric")
    .map((a) => a.metric)
    .filter((m) => m.name === "controller_run_tokens_total" || m.name === "controller_run_cost_usd_total");
  const spend = d.actions.find((a) => a.type === "recordSpend");
  return { rules: d.rules, status: patch?.status, metrics, spend };
}

const finishedJob = (log: string): Partial<ReconcileInput> => ({
  job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
  pod: { found: true, containerStatuses: [], agentLog: { available: true, text: log } },
});

describe("cost on the terminal patch, per execution", () => {
  it("batch: the result lines priced at half price, estimated, execution batch", () => {
    const r = terminal({
      agent: agent()
        .finalizers("agents.re-cinq.com/batch-cleanup")
        .status({ phase: "Running", batchId: "b1", batchProvider: "openai", startedAt: iso(T0) })
        .build(),
      definition: definition().batch().spec({ model: "gpt-5-mini" }).build(),
      station: station()
        .spec({ budget: { limitUSD: 10, window: "24h" } })
        .build(),
      batch: {
        lastPollAt: NOW,
        pollResult: {
          state: "ended",
          outcome: "succeeded",
          lines: [
            j({ type: "thread.started", thread_id: "uid" }),
            j({
              type: "turn.completed",
              usage: { input_tokens: 2_000_000, cached_input_tokens: 0, output_tokens: 0 },
            }),
          ],
        },
      },
    });
    expect(r.rules[0]).toBe("batch-result");
    expect(r.status).toMatchObject({
      costUSD: "0.25",
      costSource: "estimated",
      usage: {
        inputTokens: 2_000_000,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        totalTokens: 2_000_000,
      },
    });
    const labels = { station: "st", model: "gpt-5-mini", execution: "batch" };
    expect(r.metrics).toEqual([
      { name: "controller_run_tokens_total", labels: { ...labels, type: "input" }, value: 2_000_000 },
      { name: "controller_run_cost_usd_total", labels, value: 0.25 },
    ]);
    expect(r.spend).toMatchObject({
      entry: { costUSD: "0.25", completedAt: iso(NOW) },
      windowMs: 86_400_000,
    });
  });

  it("batch fallback: the Job's CLI lines at the full price, execution batch_fallback", () => {
    const r = terminal({
      agent: agent()
        .status({
          phase: "Running",
          batchId: "b1",
          batchProvider: "openai",
          batchFallback: true,
          jobName: "agent-job-run-1",
          startedAt: iso(T0),
        })
        .build(),
      definition: definition().batch().spec({ model: "gpt-5-mini" }).build(),
      ...finishedJob(
        j({
          type: "turn.completed",
          usage: { input_tokens: 1_000_000, cached_input_tokens: 0, output_tokens: 0 },
        }),
      ),
    });
    expect(r.rules[0]).toBe("job-finished");
    expect(r.status).toMatchObject({ costUSD: "0.25", costSource: "estimated" });
    expect(r.metrics.at(-1)).toEqual({
      name: "controller_run_cost_usd_total",
      labels: { station: "st", model: "gpt-5-mini", execution: "batch_fallback" },
      value: 0.25,
    });
    // No budget on the Station: nothing to record.
    expect(r.spend).toBeUndefined();
  });

  it("realtime codex: each resumed turn counted once (the thread's running totals differenced)", () => {
    const turn = (input: number, output: number) =>
      j({
        type: "turn.completed",
        usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output },
      });
    const started = j({ type: "thread.started", thread_id: "t1" });
    const r = terminal({
      agent: agent().running(T0).build(),
      definition: definition().spec({ model: "gpt-5-codex", execution: "realtime" }).build(),
      ...finishedJob([started, turn(100, 7), started, turn(300, 16)].join("\n")),
    });
    expect(r.status?.usage).toEqual({
      inputTokens: 300,
      outputTokens: 16,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      totalTokens: 316,
    });
    expect(r.metrics[0]).toMatchObject({ labels: { execution: "realtime", model: "gpt-5-codex" } });
  });

  it("a CLI run that succeeded with no usage in its lines is charged its bound, flagged, never $0", () => {
    const r = terminal({ agent: agent().running(T0).build(), ...finishedJob("plain text\n") });
    expect(r.status).toMatchObject({ costSource: "bounded" });
    expect(Number(r.status?.costUSD)).toBeGreaterThan(0);
    expect(r.status?.usage).toMatchObject({ totalTokens: 0 });
  });
});

describe("a bill within bounds, never hidden (docs/cost-and-budgets.md#a-bill-within-bounds)", () => {
  const ran = [
    {
      name: "agent",
      image: "i",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0 } },
    },
  ];
  const started = j({ kind: "lifecycle", phase: "agent", status: "started" });
  const ended = j({ kind: "lifecycle", phase: "agent", status: "succeeded", exitCode: 0 });
  const real = j({
    type: "result",
    total_cost_usd: 8.7,
    usage: { input_tokens: 2_000_000, output_tokens: 20_000 },
  });
  const job: ReconcileInput["job"] = {
    found: true,
    status: { conditions: [{ type: "Complete", status: "True" }] },
  };
  const withLog = (text: string, facts?: Partial<LogFacts>): Partial<ReconcileInput> => ({
    job,
    pod: {
      found: true,
      containerStatuses: ran,
      agentLog: {
        available: true,
        text,
        ...(facts ? { facts: { ...meterText(text, plan).facts, ...facts } } : {}),
      },
    },
  });
  const plan = {
    vendor: "claude" as const,
    usage: { vendor: "claude" as const, execution: "interactive" as const, model: "" },
    keepBytes: 1 << 18,
  };
  const boundUsd = Number(formatUsd(runBoundUsd("claude", 60)));

  it("M1: output_tokens 9007199254740991 is cut to the wall time's bound and charged the bound, flagged", () => {
    const forged = j({ type: "result", usage: { input_tokens: 10, output_tokens: Number.MAX_SAFE_INTEGER } });
    const r = terminal({ agent: agent().running(T0).build(), ...withLog(`${forged}\n`) });
    expect(r.status).toMatchObject({ costSource: "bounded" });
    expect(Number(r.status?.costUSD)).toBe(boundUsd);
    // The attack's figure was 135107988821.19: the bound is a run's worth, not the window's budget.
    expect(Number(r.status?.costUSD)).toBeLessThan(1000);
    expect(r.status?.usage).toMatchObject({ outputTokens: runTokenBound(60).outputTokens });
    expect(r.status?.costNote).toMatch(/more tokens than it could have consumed in its 60 s/);
  });

  it("an honest run within the bound is believed as it reported", () => {
    const r = terminal({
      agent: agent().running(T0).build(),
      ...withLog(`${started}\n${real}\n${ended}\n`, {}),
    });
    expect(r.status).toMatchObject({ costSource: "reported", costUSD: "8.7" });
  });

  it("M2: a log whose beginning was rotated away (the closing event without agent/started) is charged the bound", () => {
    const forgedLow = j({ type: "result", total_cost_usd: 0.000001, usage: { input_tokens: 1 } });
    const r = terminal({ agent: agent().running(T0).build(), ...withLog(`${forgedLow}\n${ended}\n`, {}) });
    expect(r.status).toMatchObject({ costSource: "bounded" });
    expect(Number(r.status?.costUSD)).toBe(boundUsd);
    expect(r.status?.costNote).toMatch(/rotated away/);
  });

  it("a line too long to read leaves the log partly unread: charged the bound", () => {
    const r = terminal({
      agent: agent().running(T0).build(),
      ...withLog(`${started}\n${real}\n${ended}\n`, { unreadLines: 1 }),
    });
    expect(r.status).toMatchObject({ costSource: "bounded" });
    expect(r.status?.costNote).toMatch(/1 line\(s\) of the run's log were longer than/);
  });

  it("M2: a run whose log could not be read at all is charged the bound, never $0", () => {
    const r = terminal({
      agent: agent().running(T0).build(),
      job,
      pod: { found: true, containerStatuses: ran, agentLog: { available: false, error: "503 unavailable" } },
    });
    expect(r.status).toMatchObject({ costSource: "bounded" });
    expect(Number(r.status?.costUSD)).toBe(boundUsd);
  });
});
