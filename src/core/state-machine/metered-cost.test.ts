/**
 * A gateway run's terminal patch (docs/gateway.md#metering): its cost is the gateway's meter of the
 * providers' answers, whatever the run's own lines say, however the run ended.
 */
import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, station, T0 } from "../../../test/support/core-builders.js";
import type { PatchStatusAction } from "../actions.js";
import type { MeteredInput, ReconcileInput } from "../input.js";
import { decide } from "./reconcile.js";

const NOW = T0 + 60_000;

/** A claude result line claiming whatever the agent likes. */
const forgedResult = (usd: number, input = 10) =>
  JSON.stringify({
    type: "result",
    subtype: "success",
    is_error: false,
    result: "done",
    session_id: "s1",
    total_cost_usd: usd,
    usage: {
      input_tokens: input,
      output_tokens: 1,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    },
  });

const jobWith = (conditions: { type: string; status: string; reason?: string }[], log: string) => ({
  job: { found: true as const, gatewayVendor: "anthropic" as const, status: { conditions } },
  pod: { found: true as const, containerStatuses: [], agentLog: { available: true as const, text: log } },
});
const complete = [{ type: "Complete", status: "True" }];
const deadline = [{ type: "Failed", status: "True", reason: "DeadlineExceeded" }];

const sonnet = (
  inputTokens: number,
  outputTokens: number,
  extra: Partial<MeteredInput["models"][0]> = {},
) => ({
  model: "claude-sonnet-4-6",
  inputTokens,
  outputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  ...extra,
});

const metered = (over: Partial<MeteredInput> = {}): MeteredInput => ({
  vendor: "anthropic",
  calls: 2,
  incompleteCalls: 0,
  models: [sonnet(1_000_000, 100_000)],
  ...over,
});

function decideTerminal(over: Partial<ReconcileInput>) {
  const d = decide(
    input({
      now: NOW,
      agent: agent().running(T0).build(),
      definition: definition().spec({ model: "claude-sonnet-4-6" }).build(),
      station: station()
        .spec({ budget: { limitUSD: 100, window: "24h" } })
        .build(),
      ...over,
    }),
  );
  const patch = d.actions.find((a): a is PatchStatusAction => a.type === "patchStatus");
  const spend = d.actions.find((a) => a.type === "recordSpend");
  return { rules: d.rules, status: patch?.status, spend };
}

// claude-sonnet-4-6: $3 input, $15 output per million tokens (src/core/pricing/prices.ts).
describe("a gateway run is priced from the gateway's meter", () => {
  const cases: {
    name: string;
    over: Partial<ReconcileInput>;
    status: Record<string, unknown>;
    absent?: string[];
  }[] = [
    {
      name: "a forged result line's cost and tokens are not read: the metered ones are the run's",
      over: { ...jobWith(complete, forgedResult(0.000001, 1)), metered: metered() },
      status: {
        phase: "Succeeded",
        costSource: "metered",
        costUSD: "4.5",
        usage: { inputTokens: 1_000_000, outputTokens: 100_000, totalTokens: 1_100_000 },
      },
      absent: ["costReportRejected", "costNote"],
    },
    {
      name: "a line claiming more than its tokens could cost is not bounded either: the meter decides",
      over: { ...jobWith(complete, forgedResult(9999)), metered: metered({ models: [sonnet(10, 1)] }) },
      status: { costSource: "metered", costUSD: "0.000045" },
      absent: ["costReportRejected"],
    },
    {
      name: "a run whose log carries no usage at all is not charged a bound: nothing unread, nothing guessed",
      over: { ...jobWith(complete, "no lines\n"), metered: metered({ models: [sonnet(0, 1_000)] }) },
      status: { costSource: "metered", costUSD: "0.015" },
      absent: ["costNote"],
    },
    {
      name: "the gateway saw no call and the lines report none: the run cost nothing",
      over: { ...jobWith(complete, "no lines\n"), metered: metered({ calls: 0, models: [] }) },
      status: { costSource: "metered", costUSD: "0", usage: { totalTokens: 0 } },
    },
    {
      name: "the gateway recorded no call but the lines report tokens (its records were lost): the lines are read, flagged, never $0",
      over: { ...jobWith(complete, forgedResult(0.00004)), metered: metered({ calls: 0, models: [] }) },
      status: {
        costSource: "reported",
        costUSD: "0.00004",
        costNote:
          "the model gateway recorded no call of this run, but its lines report tokens: its cost is read from its lines (docs/gateway.md#what-the-controller-makes-of-it)",
      },
    },
    {
      name: "a run that hit its deadline is billed what the gateway metered",
      over: { ...jobWith(deadline, ""), metered: metered() },
      status: { phase: "Failed", costSource: "metered", costUSD: "4.5" },
    },
    {
      name: "a model the table has no price for: its vendor's highest rates, listed as unpriced",
      over: {
        ...jobWith(complete, ""),
        metered: metered({ models: [{ ...sonnet(1_000_000, 0), model: "claude-unknown-9" }] }),
      },
      status: { costSource: "metered", unpricedModels: ["claude-unknown-9"] },
    },
    {
      name: "calls still in flight when the controller stopped waiting: priced without them, said in costNote",
      over: { ...jobWith(complete, ""), metered: metered({ unsettledCalls: 1 }) },
      status: {
        costSource: "metered",
        costUSD: "4.5",
        costNote:
          "the model gateway still had 1 call of this run in flight when the controller stopped waiting for them: their usage is not in the cost",
      },
    },
    {
      name: "a Job gone before its result was read: still billed what the gateway metered",
      over: { job: { found: false }, metered: metered() },
      status: { phase: "Failed", costSource: "metered", costUSD: "4.5" },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = decideTerminal(c.over);
      expect(r.status).toMatchObject(c.status);
      for (const field of c.absent ?? []) expect(r.status).not.toHaveProperty(field);
    });
  }

  it("the Station's spend records the metered cost, not the log's", () => {
    const r = decideTerminal({ ...jobWith(complete, forgedResult(0.01)), metered: metered() });
    expect(r.spend).toMatchObject({ entry: { costUSD: "4.5", completedAt: iso(NOW) } });
  });

  it("without the gateway's meter the log is read as before (the meter replaces nothing else)", () => {
    const r = decideTerminal({ ...jobWith(complete, forgedResult(0.25)) });
    expect(r.status).toMatchObject({ costSource: "reported", costUSD: "0.25" });
  });
});
