import { describe, expect, it } from "vitest";
import { station } from "../../../test/support/core-builders.js";
import type { Station } from "../types.js";
import {
  admitRequest,
  inFlightBudget,
  RESERVATION_STALE_MS,
  type RecordedRunSpend,
} from "./budget-in-flight.js";

const NOW = Date.parse("2026-12-07T12:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();
const budgeted = (spend: { agent: string; costUSD: string; at: number }[] = []): Station => ({
  ...station()
    .spec({ budget: { limitUSD: 1, window: "1h" } })
    .build(),
  status: { spend: spend.map((e) => ({ agent: e.agent, completedAt: iso(e.at), costUSD: e.costUSD })) },
});
const rec = (over: Partial<RecordedRunSpend>): RecordedRunSpend => ({
  agentUid: "run-a",
  meteredUsd: 0,
  reservedUsd: 0,
  updatedAt: NOW - 1_000,
  ...over,
});

describe("inFlightBudget: what is committed against a Station's budget while runs run (docs/gateway.md#budgets-in-flight)", () => {
  const cases: [string, Station, RecordedRunSpend[], Record<string, number> | undefined][] = [
    ["no budget: nothing to hold", station().build(), [rec({ meteredUsd: 5 })], undefined],
    [
      "ended runs from status.spend, running runs from their records, reservations of live processes",
      budgeted([{ agent: "ended-1", costUSD: "0.2", at: NOW - 60_000 }]),
      [
        rec({ agentUid: "run-a", meteredUsd: 0.1, reservedUsd: 0.05 }),
        rec({ agentUid: "run-b", meteredUsd: 0.3 }),
      ],
      { endedUsd: 0.2, runningUsd: 0.4, reservedUsd: 0.05, limitUsd: 1 },
    ],
    [
      "a run the controller already recorded is counted once, from status.spend",
      budgeted([{ agent: "run-a", costUSD: "0.25", at: NOW - 60_000 }]),
      [rec({ agentUid: "run-a", meteredUsd: 0.25 })],
      { endedUsd: 0.25, runningUsd: 0, reservedUsd: 0 },
    ],
    [
      "two processes' records of one run add up",
      budgeted(),
      [rec({ meteredUsd: 0.1 }), rec({ meteredUsd: 0.2, reservedUsd: 0.3 })],
      { runningUsd: 0.3, reservedUsd: 0.3 },
    ],
    [
      "a gone process's reservations no longer count, its metered calls do",
      budgeted(),
      [rec({ meteredUsd: 0.1, reservedUsd: 0.5, updatedAt: NOW - RESERVATION_STALE_MS })],
      { runningUsd: 0.1, reservedUsd: 0 },
    ],
    [
      "a record last written before the window has left it",
      budgeted(),
      [rec({ meteredUsd: 0.7, updatedAt: NOW - 3_600_000 })],
      { runningUsd: 0 },
    ],
  ];
  for (const [name, st, records, want] of cases) {
    it(name, () => {
      const b = inFlightBudget(st, records, NOW);
      if (want === undefined) expect(b).toBeUndefined();
      else expect(b).toMatchObject(want);
    });
  }
});

describe("admitRequest", () => {
  const b = { limitUsd: 1, window: "1h", endedUsd: 0.5, runningUsd: 0.2, reservedUsd: 0.25 };
  const ids = { namespace: "ai-agents", station: "review" };
  it("everything committed, the request's own reservation included, fits: admitted", () => {
    expect(admitRequest(b, ids, 0.25, "w")).toEqual({ ok: true });
  });
  it("past the limit: refused with what is spent, the limit and what the request could cost", () => {
    expect(
      admitRequest({ ...b, reservedUsd: 0.4 }, ids, 0.3, "output limit 20000, at claude-sonnet-4-6's price"),
    ).toEqual({
      ok: false,
      message:
        "gateway: budget of Station ai-agents/review reached: $0.8 spent or reserved of $1 in the last 1h, and this request may cost up to $0.3 (output limit 20000, at claude-sonnet-4-6's price); refused",
    });
  });
  it("a limit of 0 refuses every request", () => {
    expect(
      admitRequest({ ...b, limitUsd: 0, endedUsd: 0, runningUsd: 0, reservedUsd: 0.001 }, ids, 0.001, "w").ok,
    ).toBe(false);
  });
});
