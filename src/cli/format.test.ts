import { describe, expect, it } from "vitest";
import type { Agent } from "../../generated/crds/agent.js";
import { exitCodeOf, queuePlaceOf, reasonOf } from "../client/terminal.js";
import { age, formatAgentDetail, formatAgentTable, formatObjects } from "./format.js";

const NOW = Date.parse("2026-12-01T12:00:00Z");

function agent(name: string, status: Agent["status"]): Agent {
  return {
    apiVersion: "agents.re-cinq.com/v1beta1",
    kind: "Agent",
    metadata: { name, namespace: "ai-agents", creationTimestamp: "2026-12-01T11:55:00Z" },
    spec: { stationRef: "writer" },
    ...(status ? { status } : {}),
  };
}

const queued = agent("run-2", {
  phase: "Pending",
  conditions: [
    {
      type: "Queued",
      status: "True",
      reason: "WaitingForSlot",
      lastTransitionTime: "2026-12-01T11:55:01Z",
      message: "waiting for a free slot on Station writer: position 2 of 5 in its queue (at most 1 running)",
    },
  ],
});

const succeeded = agent("run-1", {
  phase: "Succeeded",
  exitCode: 0,
  sessionId: "4855a4a8",
  prUrl: "https://github.com/re-cinq/site/pull/7",
  startedAt: "2026-12-01T11:55:02Z",
  completedAt: "2026-12-01T11:56:00Z",
  jobName: "run-1",
  // As the controller leaves a finished run (src/core/events/conditions.ts).
  conditions: [
    {
      type: "Ready",
      status: "False",
      reason: "Succeeded",
      message: "the run has finished",
      lastTransitionTime: "2026-12-01T11:56:00Z",
    },
    {
      type: "Complete",
      status: "True",
      reason: "Succeeded",
      message: "the run succeeded (exit code 0)",
      lastTransitionTime: "2026-12-01T11:56:00Z",
    },
  ],
  output:
    '{"type":"system","subtype":"init","session_id":"4855a4a8"}\n{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.0106,"usage":{"input_tokens":3,"output_tokens":24}}\n',
  usage: { inputTokens: 3, outputTokens: 24, cacheReadTokens: 0, cacheWriteTokens: 0, totalTokens: 27 },
  costUSD: "0.0106",
  costSource: "reported",
});

const failed = agent("run-3", { phase: "Failed", failureReason: "Station writer not found" });

describe("status of one Agent", () => {
  it("a cost the controller did not believe, or could not read, says so (docs/cost-and-budgets.md)", () => {
    const forged = {
      ...succeeded,
      status: {
        ...succeeded.status,
        costUSD: "0.014",
        costSource: "estimated" as const,
        costReportRejected: "1000000000000000.375",
      },
    };
    expect(formatAgentDetail(forged)).toContain(
      "Cost:       $0.014 estimated (3 in / 24 out tokens)\nCost note:  the run reported $1000000000000000.375, more than its tokens can cost: not believed\n",
    );
    const unread = { ...succeeded, status: { ...succeeded.status, costNote: "its cost is unknown" } };
    expect(formatAgentDetail(unread)).toContain("Cost note:  its cost is unknown\n");
  });

  it("a run that waited for its provider says how often, how long and its last answer", () => {
    const waited = {
      ...succeeded,
      status: {
        ...succeeded.status,
        providerRetries: {
          count: 2,
          waitedSeconds: 12,
          last: { provider: "anthropic", status: 529, at: "2026-01-01T00:00:30Z" },
        },
      },
    };
    expect(formatAgentDetail(waited)).toContain(
      "Provider retries: 2 (waited 12 s; last: anthropic 529 at 2026-01-01T00:00:30Z)\n",
    );
    expect(formatAgentDetail(succeeded)).not.toContain("Provider retries");
  });

  it("a running run that is waiting for its provider shows its last wait", () => {
    const running = { ...succeeded, status: { phase: "Running" as const, jobName: "j" } };
    const wait = {
      kind: "provider-limit" as const,
      provider: "anthropic",
      status: 529,
      retry: 2,
      waitSeconds: 12,
      at: "2026-01-01T00:00:30.000Z",
      reason: "overloaded",
      message: "Overloaded",
    };
    expect(formatAgentDetail(running, wait)).toContain(
      "Last provider wait: anthropic answered 529 (overloaded) · retry 2 in 12 s · Overloaded (at 2026-01-01T00:00:30.000Z)\n",
    );
  });

  it("a finished run: exit code, cost and tokens from the status fields, session and PR", () => {
    expect(formatAgentDetail(succeeded)).toBe(
      [
        "Name:       run-1",
        "Namespace:  ai-agents",
        "Station:    writer",
        "Phase:      Succeeded",
        "Job:        run-1",
        "Started:    2026-12-01T11:55:02Z",
        "Completed:  2026-12-01T11:56:00Z",
        "Exit code:  0",
        "Cost:       $0.0106 (3 in / 24 out tokens)",
        "Session:    4855a4a8",
        "PR:         https://github.com/re-cinq/site/pull/7",
        "",
      ].join("\n"),
    );
  });

  it("a queued run: its place and why, from the Queued condition", () => {
    expect(formatAgentDetail(queued)).toBe(
      [
        "Name:       run-2",
        "Namespace:  ai-agents",
        "Station:    writer",
        "Phase:      Pending",
        "Queue:      2 of 5",
        "Reason:     WaitingForSlot: waiting for a free slot on Station writer: position 2 of 5 in its queue (at most 1 running)",
        "",
      ].join("\n"),
    );
  });

  it("a Succeeded run has no reason unless its read-back was partial", () => {
    expect(reasonOf(succeeded)).toBe("");
    const partial = structuredClone(succeeded);
    (partial.status as { failureReason?: string }).failureReason =
      "run output unavailable: pod garbage-collected";
    expect(reasonOf(partial)).toBe("run output unavailable: pod garbage-collected");
  });

  it("a Failed run without failureReason: the Ready condition's reason and message", () => {
    const bare = agent("run-4", {
      phase: "Failed",
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "Failed",
          message: "the run failed (exit code 2)",
          lastTransitionTime: "2026-12-01T11:56:00Z",
        },
      ],
    });
    expect(reasonOf(bare)).toBe("Failed: the run failed (exit code 2)");
  });

  it("a run that failed before it ran: the failure reason, exit code 1", () => {
    expect(reasonOf(failed)).toBe("Station writer not found");
    expect(exitCodeOf(failed)).toBe(1);
    expect(exitCodeOf(agent("x", { phase: "Failed", exitCode: 3 }))).toBe(3);
  });

  it("a place beyond the controller's detail limit", () => {
    const far = structuredClone(queued);
    (far.status?.conditions?.[0] as { message: string }).message =
      "waiting for a free slot on Station writer: beyond position 20 in its queue (at most 1 running)";
    expect(queuePlaceOf(far)).toMatchObject({ position: 20, waiting: undefined });
  });
});

describe("cost from the status fields, never from the output text", () => {
  const withCost = (status: Record<string, unknown>) =>
    agent("run-9", { phase: "Succeeded", exitCode: 0, ...status });
  it.each([
    [
      {
        costUSD: "0.42",
        costSource: "estimated",
        usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 5, cacheWriteTokens: 0 },
      },
      "$0.42 estimated (10 in / 2 out / 5 cache read / 0 cache write tokens)",
      "~$0.42",
    ],
    [
      { costSource: "unpriced", usage: { inputTokens: 1, outputTokens: 1 } },
      "unpriced (1 in / 1 out tokens)",
      "unpriced",
    ],
    // An output that names a cost is not read: only the controller's figure counts.
    [{ output: '{"type":"result","total_cost_usd":9}' }, undefined, "-"],
  ])("%j", (status, detail, cell) => {
    const a = withCost(status);
    const line = formatAgentDetail(a)
      .split("\n")
      .find((l) => l.startsWith("Cost:"));
    expect(line?.replace(/^Cost:\s+/, "")).toBe(detail);
    expect(formatAgentTable([a], NOW).split("\n")[1]).toContain(`   ${cell}   `);
  });
});

describe("a table of runs", () => {
  it("one row per run, columns aligned", () => {
    expect(formatAgentTable([succeeded, queued, failed], NOW)).toBe(
      [
        "NAME    STATION   PHASE       QUEUE    EXIT   COST      SESSION    AGE   REASON",
        "run-1   writer    Succeeded   -        0      $0.0106   4855a4a8   5m    -",
        "run-2   writer    Pending     2 of 5   -      -         -          5m    WaitingForSlot: waiting for a free slot on Station writer: p…",
        "run-3   writer    Failed      -        -      -         -          5m    Station writer not found",
        "",
      ].join("\n"),
    );
  });

  it.each([
    ["2026-12-01T11:59:15Z", "45s"],
    ["2026-12-01T11:00:00Z", "60m"],
    ["2026-12-01T06:00:00Z", "6h"],
    ["2026-11-28T12:00:00Z", "3d"],
    [undefined, "<unknown>"],
  ])("age of %s is %s", (since, text) => {
    expect(age(since, NOW)).toBe(text);
  });
});

describe("-o", () => {
  it("name is kubectl's resource/name", () => {
    expect(formatObjects([succeeded, queued], "name", true)).toBe(
      "agent.agents.re-cinq.com/run-1\nagent.agents.re-cinq.com/run-2\n",
    );
  });
  it("json of several is a List", () => {
    const parsed = JSON.parse(formatObjects([succeeded], "json", true));
    expect(parsed).toMatchObject({
      apiVersion: "v1",
      kind: "List",
      items: [{ metadata: { name: "run-1" } }],
    });
  });
  it("yaml of one is the object", () => {
    expect(formatObjects([failed], "yaml", false)).toContain("failureReason: Station writer not found\n");
  });
});
