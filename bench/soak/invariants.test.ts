import { describe, expect, it } from "vitest";
import {
  type AgentSnap,
  batchesTwice,
  lostAgents,
  overConcurrency,
  type Snapshot,
  type StationSnap,
  type StuckBounds,
  statusFingerprint,
  stuckAgents,
  terminalDisagreements,
  twoJobs,
  ViolationLog,
} from "./invariants.js";

const NOW = 1_000_000;
const agent = (name: string, o: Partial<AgentSnap> = {}): AgentSnap => ({
  name,
  uid: `uid-${name}`,
  station: "st",
  execution: "interactive",
  quietSince: NOW,
  conditions: [],
  deleting: false,
  ...o,
});
const station = (o: Partial<StationSnap> = {}): StationSnap => ({
  name: "st",
  concurrencyPolicy: "Allow",
  maxConcurrentRuns: 2,
  ...o,
});
const snap = (agents: AgentSnap[], stations: StationSnap[] = [station()]): Snapshot => ({
  at: NOW,
  agents,
  stations,
});
const succeeded = [
  { type: "Ready", status: "False", reason: "Succeeded" },
  { type: "Complete", status: "True", reason: "Succeeded" },
];
const failed = [
  { type: "Ready", status: "False", reason: "Failed" },
  { type: "Failed", status: "True", reason: "JobFailed" },
];

describe("the soak's invariants (docs/soak.md#invariants)", () => {
  const bounds: StuckBounds = {
    pending: { interactive: 60_000, batch: 600_000, realtime: 60_000 },
    running: { interactive: 300_000, batch: 900_000, realtime: 300_000 },
  };

  it.each([
    {
      row: "Running within its bound",
      agents: [agent("a", { phase: "Running", quietSince: NOW - 299_000 })],
      stuck: [],
    },
    {
      row: "Running past its bound",
      agents: [agent("a", { phase: "Running", quietSince: NOW - 301_000 })],
      stuck: ["a"],
    },
    {
      row: "batch Running through poll errors until its timeout",
      agents: [agent("a", { phase: "Running", execution: "batch", quietSince: NOW - 800_000 })],
      stuck: [],
    },
    {
      row: "Pending past its bound with a free slot",
      agents: [agent("a", { quietSince: NOW - 61_000 })],
      stuck: ["a"],
    },
    {
      row: "a batch Pending in its submit back-off",
      agents: [agent("a", { execution: "batch", quietSince: NOW - 300_000 })],
      stuck: [],
    },
    {
      row: "a batch Pending unchanged past the longest back-off",
      agents: [agent("a", { execution: "batch", quietSince: NOW - 601_000 })],
      stuck: ["a"],
    },
    {
      row: "Pending past its bound behind a full Station",
      agents: [
        agent("a", { quietSince: NOW - 61_000 }),
        agent("b", { phase: "Running" }),
        agent("c", { phase: "Running" }),
      ],
      stuck: [],
    },
    {
      row: "terminal or being deleted, however old",
      agents: [
        agent("a", { phase: "Succeeded", quietSince: 0 }),
        agent("b", { phase: "Running", quietSince: 0, deleting: true }),
      ],
      stuck: [],
    },
  ])("stuck: $row", ({ agents, stuck }) => {
    expect(stuckAgents(snap(agents), bounds).map((v) => v.agent)).toEqual(stuck);
  });

  it.each([
    { row: "seen terminal, then pruned", seen: ["uid-a"], deleted: [], final: [], lost: [] },
    { row: "deleted by the soak", seen: [], deleted: ["a"], final: [], lost: [] },
    {
      row: "terminal at the end",
      seen: ["uid-a"],
      deleted: [],
      final: [agent("a", { phase: "Failed" })],
      lost: [],
    },
    { row: "gone, never terminal", seen: [], deleted: [], final: [], lost: ["a"] },
    {
      row: "still Running at the end",
      seen: [],
      deleted: [],
      final: [agent("a", { phase: "Running" })],
      lost: ["a"],
    },
    {
      row: "replaced on a Replace Station, gone",
      seen: [],
      deleted: [],
      final: [],
      replaced: ["uid-a"],
      lost: [],
    },
    {
      row: "last seen Running on a Replace Station, still Running at the end",
      seen: [],
      deleted: [],
      final: [agent("a", { phase: "Running" })],
      replaced: ["uid-a"],
      lost: ["a"],
    },
  ])("lost: $row", ({ seen, deleted, final, lost, ...rest }) => {
    const replaced = new Set("replaced" in rest ? rest.replaced : []);
    const v = lostAgents(
      [{ name: "a", uid: "uid-a" }],
      new Set(seen),
      new Set(deleted),
      snap(final),
      replaced,
    );
    expect(v.map((x) => x.agent)).toEqual(lost);
  });

  it.each([
    { row: "one Job each", jobs: { a: ["agent-job-a"], b: ["agent-job-b"] }, two: [] },
    { row: "a batch Agent with no Job", jobs: { a: [] }, two: [] },
    { row: "two Jobs for one Agent", jobs: { a: ["agent-job-a", "agent-job-a-2"] }, two: ["a"] },
  ])("two Jobs: $row", ({ jobs, two }) => {
    const seen = new Map(Object.entries(jobs).map(([k, v]) => [k, new Set<string>(v)]));
    expect(twoJobs(seen, NOW).map((v) => v.agent)).toEqual(two);
  });

  it.each([
    {
      row: "one batch per Agent across providers",
      batches: [
        { provider: "anthropic", id: "msgbatch_1", agentUid: "u1" },
        { provider: "openai", id: "batch_1", agentUid: "u2" },
      ],
      twice: [],
    },
    {
      row: "a lost submit resent: two batches for one Agent",
      batches: [
        { provider: "gemini", id: "batches/1", agentUid: "u1" },
        { provider: "gemini", id: "batches/2", agentUid: "u1" },
      ],
      twice: ["a"],
    },
    {
      row: "a batch of an Agent the soak did not create",
      batches: [
        { provider: "anthropic", id: "m1", agentUid: "other" },
        { provider: "anthropic", id: "m2", agentUid: "other" },
      ],
      twice: ["other"],
    },
  ])("batch twice: $row", ({ batches, twice }) => {
    expect(batchesTwice(batches, new Map([["u1", "a"]]), NOW).map((v) => v.agent)).toEqual(twice);
  });

  it.each([
    { row: "at the limit", st: station(), running: 2, deleting: 0, over: false },
    { row: "over maxConcurrentRuns", st: station(), running: 3, deleting: 0, over: true },
    { row: "a deleting Agent left out", st: station(), running: 2, deleting: 1, over: false },
    {
      row: "Forbid with one Running",
      st: station({ concurrencyPolicy: "Forbid" }),
      running: 1,
      deleting: 0,
      over: false,
    },
    {
      row: "Forbid with two Running",
      st: station({ concurrencyPolicy: "Forbid" }),
      running: 2,
      deleting: 0,
      over: true,
    },
    {
      row: "Replace with two Running",
      st: station({ concurrencyPolicy: "Replace", maxConcurrentRuns: 5 }),
      running: 2,
      deleting: 0,
      over: true,
    },
    {
      row: "maxConcurrentRuns 0 is no limit",
      st: station({ maxConcurrentRuns: 0 }),
      running: 9,
      deleting: 0,
      over: false,
    },
    {
      row: "no limit",
      st: station({ maxConcurrentRuns: undefined }),
      running: 9,
      deleting: 0,
      over: false,
    },
  ])("concurrency: $row", ({ st, running, deleting, over }) => {
    const agents = [
      ...Array.from({ length: running }, (_, i) => agent(`r${i}`, { phase: "Running" })),
      ...Array.from({ length: deleting }, (_, i) => agent(`d${i}`, { phase: "Running", deleting: true })),
    ];
    expect(overConcurrency(snap(agents, [st])).length > 0).toBe(over);
  });

  it.each([
    {
      row: "Succeeded, exit 0, Complete",
      a: { phase: "Succeeded", exitCode: 0, conditions: succeeded },
      bad: "",
    },
    {
      row: "Succeeded batch without an exit code",
      a: { phase: "Succeeded", conditions: succeeded },
      bad: "",
    },
    { row: "Failed, exit 3, Failed=True", a: { phase: "Failed", exitCode: 3, conditions: failed }, bad: "" },
    {
      row: "Succeeded with exit 1",
      a: { phase: "Succeeded", exitCode: 1, conditions: succeeded },
      bad: "Succeeded: exitCode 1",
    },
    {
      row: "Failed with exit 0",
      a: { phase: "Failed", exitCode: 0, conditions: failed },
      bad: "Failed: exitCode 0",
    },
    {
      row: "Succeeded without Complete, still Ready",
      a: { phase: "Succeeded", exitCode: 0, conditions: [{ type: "Ready", status: "True" }] },
      bad: "Succeeded: Ready is True, not False; no Complete=True",
    },
    {
      row: "Failed with Complete=True",
      a: { phase: "Failed", exitCode: 2, conditions: [...failed, { type: "Complete", status: "True" }] },
      bad: "Failed: Complete=True",
    },
    { row: "not terminal", a: { phase: "Running", conditions: [] }, bad: "" },
  ])("terminal agrees: $row", ({ a, bad }) => {
    const v = terminalDisagreements(snap([agent("a", a)]));
    expect(v.map((x) => x.detail).join("")).toBe(bad);
  });

  it("the log counts an Agent once per invariant, a Station over its limit once per set of Agents", () => {
    const log = new ViolationLog();
    const stuck = { invariant: "stuck" as const, agent: "a", at: 1, detail: "x" };
    log.add([stuck, { ...stuck, at: 2, detail: "y" }]);
    const over = { invariant: "concurrency" as const, agent: "st", at: 1, detail: "3 Running (a, b, c)" };
    log.add([over, over, { ...over, detail: "3 Running (b, c, d)" }]);
    expect(log.counts()).toEqual({
      stuck: 1,
      lost: 0,
      "two-jobs": 0,
      "batch-twice": 0,
      concurrency: 2,
      "terminal-agrees": 0,
    });
  });

  it.each([
    { row: "the same status", b: { phase: "Pending" }, changed: false },
    { row: "no status and Pending", a: undefined, b: { phase: "Pending" }, changed: false },
    { row: "another phase", b: { phase: "Running" }, changed: true },
    { row: "a batch id", b: { phase: "Pending", batchId: "msgbatch_1" }, changed: true },
    {
      row: "the next submit attempt in the Ready message",
      b: {
        phase: "Pending",
        conditions: [{ type: "Ready", status: "False", reason: "BatchSubmitRetrying", message: "attempt 3" }],
      },
      changed: true,
    },
  ])("a status change: $row", ({ b, changed, ...rest }) => {
    const a = "a" in rest ? rest.a : { phase: "Pending" };
    expect(statusFingerprint(a) !== statusFingerprint(b)).toBe(changed);
  });
});
