/**
 * The sink deliveries the reconcile core asks for at each moment of a batch run, taken from
 * `reconcile` itself, so the sink layer's tests send what production sends
 * (docs/events.md#what-a-listener-sees-for-a-batch-run).
 */
import type { EmitSinkEventsAction } from "../../src/core/actions.js";
import { reconcile } from "../../src/core/state-machine/reconcile.js";
import type { AgentSpec, OutputSelector, Sink } from "../../src/core/types.js";
import { agent, definition, input, iso, station, T0 } from "./core-builders.js";

/** The moments a batch run sends events at, one reconcile each. */
export type BatchMoment =
  | "started"
  | "succeeded"
  | "failed"
  | "timeout-fail"
  | "timeout-fallback"
  | "disabled";

export interface BatchRunOptions {
  /** The Agent's name; default ticket-summary-abc12 (docs/events.md#envelope's example). */
  name?: string;
  /** Default ticket-summary; the Station of that name exists. */
  stationRef?: string;
  /** Default T-1; "" leaves the task out. */
  taskId?: string;
  /** The CLI lines of the batch result ("succeeded" and "failed" only). */
  lines?: string[];
  /** The definition's output.sinks; default one http sink. */
  sinks?: Sink[];
  select?: OutputSelector[];
}

const NOW = T0 + 60_000;
const DAY = 24 * 3600_000;
const FIN = "agents.re-cinq.com/batch-cleanup";

/** The one emitSinkEvents action `reconcile` returns for the batch run at `moment`. */
export function batchSinkAction(moment: BatchMoment, options: BatchRunOptions = {}): EmitSinkEventsAction {
  const stationRef = options.stationRef ?? "ticket-summary";
  const spec: Partial<AgentSpec> = { stationRef, taskId: options.taskId ?? "T-1" };
  const run = agent(options.name ?? "ticket-summary-abc12")
    .spec(spec)
    .finalizers(FIN);
  const inFlight = (startedMs: number) =>
    run
      .status({
        phase: "Running",
        batchId: "msgbatch_1",
        batchProvider: "anthropic",
        startedAt: iso(startedMs),
      })
      .build();
  const def = definition().batch({
    output: {
      sinks: options.sinks ?? [{ type: "http", url: "https://sink.example/hook" }],
      select: options.select,
    },
  });
  const base = input({ station: station(stationRef).build(), definition: def.build(), now: NOW });

  const actions = (() => {
    switch (moment) {
      case "started":
        return reconcile({
          ...base,
          agent: run.build(),
          batch: { submitted: { batchId: "msgbatch_1", at: T0 + 30_000 } },
        });
      case "succeeded":
      case "failed":
        return reconcile({
          ...base,
          agent: inFlight(T0),
          batch: {
            lastPollAt: NOW,
            pollResult: {
              state: "ended",
              outcome: moment,
              lines: options.lines ?? [],
              ...(moment === "failed" ? { failureReason: "batch failed" } : {}),
            },
          },
        });
      case "timeout-fail":
        return reconcile({
          ...base,
          agent: inFlight(NOW - DAY),
          batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
        });
      case "timeout-fallback":
        return reconcile({
          ...base,
          agent: inFlight(NOW - DAY),
          definition: def.spec({ batch: { onTimeout: "fallback" } }).build(),
          batch: { lastPollAt: NOW },
        });
      case "disabled":
        return reconcile({
          ...base,
          agent: inFlight(T0),
          settings: { ...base.settings, batchEnabled: false },
        });
    }
  })();
  const emits = actions.filter((a): a is EmitSinkEventsAction => a.type === "emitSinkEvents");
  if (emits.length !== 1 || emits[0] === undefined) {
    throw new Error(`reconcile at "${moment}" asked for ${emits.length} sink deliveries, expected one`);
  }
  return emits[0];
}
