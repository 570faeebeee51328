/**
 * The Succeeded | Failed rules (terminal.ts), one row per case. A finished Agent: a no-op, unless it
 * lies beyond its Station's history limit (docs/decisions.md D-105).
 */
import { agent, station, T0 } from "../../../test/support/core-builders.js";
import { DAY, describeRules, REF, type Row } from "../../../test/support/state-machine-rows.js";
import * as terminal from "./terminal.js";

const doneRun = (name: string, phase: "Succeeded" | "Failed", ms: number) =>
  agent(name).completed(phase, ms).build();

/** The finished Agent deletes itself, on the condition that it is still the version it was read as. */
const pruneSelf = {
  id: "prune-run-1",
  type: "deleteAgent",
  agent: REF,
  resourceVersion: "100",
  reason: "prune",
};

const ROWS: Row[] = [
  {
    // A failed prune delete, or a crash after the terminal patch: the next poll's reconcile repairs it.
    name: "a finished Agent beyond its history limit deletes itself (rv precondition)",
    in: {
      agent: agent()
        .completed("Succeeded", T0 - DAY)
        .build(),
      station: station().spec({ successfulRunsHistoryLimit: 1 }).build(),
      stationAgents: [doneRun("newer", "Succeeded", T0)],
    },
    rules: ["terminal-prune"],
    actions: [pruneSelf],
  },
  {
    name: "failedRunsHistoryLimit 0: a failed run in the history is deleted",
    in: {
      agent: agent().completed("Failed", T0).build(),
      station: station().spec({ failedRunsHistoryLimit: 0, maxConcurrentRuns: 1 }).build(),
    },
    rules: ["terminal-prune"],
    actions: [pruneSelf],
  },
  {
    name: "a finished Agent within its history limit: no-op",
    in: {
      agent: agent().completed("Succeeded", T0).build(),
      station: station().spec({ successfulRunsHistoryLimit: 1 }).build(),
      stationAgents: [doneRun("older", "Succeeded", T0 - DAY)],
    },
    rules: ["terminal-noop"],
    actions: [],
  },
  {
    name: "terminal Agent: no actions at all",
    in: { agent: agent().completed("Succeeded", T0).build(), job: { found: false } },
    rules: ["terminal-noop"],
    actions: [],
  },
];

describeRules("Succeeded | Failed rules", ROWS, terminal);
