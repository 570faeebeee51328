import { describe, expect, it } from "vitest";
import { rulesOf } from "../../../test/support/state-machine-rows.js";
import * as finalizer from "./finalizer.js";
import * as pending from "./pending.js";
import { FINALIZER_RULES, PHASE_RULES } from "./reconcile.js";
import * as runningBatch from "./running-batch.js";
import * as runningJob from "./running-job.js";
import * as terminal from "./terminal.js";

// The rows live beside each group (state-machine/*.test.ts), and each group's test checks that its
// rules are exercised; this one checks the groups add up to the tables, so every rule is.
describe("the rule tables", () => {
  it("every phase and finalizer rule is exercised by a row: each is in exactly one tested group", () => {
    const tables = [...PHASE_RULES, ...FINALIZER_RULES].map((r) => r.id);
    const groups = [terminal, pending, runningBatch, runningJob, finalizer].flatMap((g) =>
      rulesOf(g).map((r) => r.id),
    );
    expect(new Set(tables).size).toBe(tables.length);
    expect([...groups].sort()).toEqual([...tables].sort());
  });
});
