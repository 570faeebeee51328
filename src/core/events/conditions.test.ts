import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, NS, station, T0 } from "../../../test/support/core-builders.js";
import {
  cond,
  conditionsOf,
  FIN,
  kubeEvents,
  NOW,
  NOW_ISO,
  run,
  statusPatch,
} from "../../../test/support/report-actions.js";
import type { ReconcileInput } from "../input.js";
import { MSG_USAGE_UNREAD } from "../state-machine/running-job.js";
import type { AgentCondition } from "../types.js";
import {
  conditionReason,
  type DesiredCondition,
  mergeConditions,
  QUEUE_POSITION_DETAIL,
  reasonFromKind,
} from "./conditions.js";
import { report } from "./report.js";

const EARLIER = iso(T0 - 3600_000);
const REF = { namespace: NS, name: "run-1", uid: "uid-run-1" };

/** A Station with room for one run, that run busy, and `older` Agents waiting before run-1. */
function queued(older: number, extra: Partial<ReconcileInput> = {}): Partial<ReconcileInput> {
  return {
    station: station().spec({ maxConcurrentRuns: 1 }).build(),
    stationAgents: [
      agent("busy").running(T0).build(),
      ...Array.from({ length: older }, (_, i) =>
        agent(`older-${i}`)
          .created(T0 - 1000 * (i + 1))
          .build(),
      ),
    ],
    ...extra,
  };
}

const QUEUE_MSG_2_OF_2 =
  "waiting for a free slot on Station st: position 2 of 2 in its queue (at most 1 running)";

describe("the queue: a waiting Agent shows phase Pending and why", () => {
  it("first seen waiting: patches phase Pending with Queued and Ready conditions, and one Queued Event", () => {
    const actions = run(queued(1));
    expect(statusPatch(actions)).toEqual({
      id: "patch-status",
      type: "patchStatus",
      agent: REF,
      resourceVersion: "100",
      status: {
        phase: "Pending",
        conditions: [
          cond("Queued", "True", "WaitingForSlot", QUEUE_MSG_2_OF_2),
          cond("Ready", "False", "Queued", QUEUE_MSG_2_OF_2),
        ],
      },
    });
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Normal",
        reason: "Queued",
        note: "queued behind 2 runs on Station st (position 2 of 2, at most 1 running)",
        dependsOn: ["patch-status"],
      },
    ]);
  });

  it("still at the same place: no write, no Event", () => {
    const waiting = agent()
      .status({
        phase: "Pending",
        conditions: [
          cond("Queued", "True", "WaitingForSlot", QUEUE_MSG_2_OF_2, EARLIER),
          cond("Ready", "False", "Queued", QUEUE_MSG_2_OF_2, EARLIER),
        ],
      })
      .build();
    expect(run(queued(1, { agent: waiting }))).toEqual([]);
  });

  it("the queue moved: the message follows, lastTransitionTime and phase stay, no new Event", () => {
    const waiting = agent()
      .status({
        phase: "Pending",
        conditions: [
          cond("Queued", "True", "WaitingForSlot", "waiting … position 3 of 3 …", EARLIER),
          cond("Ready", "False", "Queued", "waiting … position 3 of 3 …", EARLIER),
        ],
      })
      .build();
    const actions = run(queued(1, { agent: waiting }));
    expect(statusPatch(actions)?.status).toEqual({
      conditions: [
        cond("Queued", "True", "WaitingForSlot", QUEUE_MSG_2_OF_2, EARLIER),
        cond("Ready", "False", "Queued", QUEUE_MSG_2_OF_2, EARLIER),
      ],
    });
    expect(kubeEvents(actions)).toEqual([]);
  });

  it(`beyond position ${QUEUE_POSITION_DETAIL} the message stops moving, bounding the writes a freed slot causes`, () => {
    const [q] = conditionsOf(run(queued(QUEUE_POSITION_DETAIL + 5))) ?? [];
    expect(q?.message).toBe(
      `waiting for a free slot on Station st: beyond position ${QUEUE_POSITION_DETAIL} in its queue (at most 1 running)`,
    );
  });

  it("observedGeneration is the Agent's metadata.generation", () => {
    const a = agent().build();
    a.metadata.generation = 3;
    for (const c of conditionsOf(run(queued(0, { agent: a }))) ?? []) expect(c.observedGeneration).toBe(3);
  });
});

describe("transitions: the conditions ride in the rule's own status patch", () => {
  it("admitted after waiting: Queued ends, Ready becomes True; JobCreated after the create and the patch, then Started", () => {
    const was = agent()
      .status({
        phase: "Pending",
        conditions: [
          cond("Queued", "True", "WaitingForSlot", QUEUE_MSG_2_OF_2, EARLIER),
          cond("Ready", "False", "Queued", QUEUE_MSG_2_OF_2, EARLIER),
        ],
      })
      .build();
    const actions = run({ agent: was });
    expect(statusPatch(actions)?.status).toEqual({
      phase: "Running",
      jobName: "agent-job-run-1",
      startedAt: NOW_ISO,
      conditions: [
        cond("Queued", "False", "Started", "the run left the queue"),
        cond("Ready", "True", "Running", "running in Job agent-job-run-1"),
      ],
    });
    expect(statusPatch(actions)?.dependsOn).toEqual(["create-job"]);
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Normal",
        reason: "JobCreated",
        note: "created Job agent-job-run-1",
        dependsOn: ["create-job", "patch-status"],
      },
      {
        regarding: "run-1",
        type: "Normal",
        reason: "Started",
        note: "the run started: running in Job agent-job-run-1",
        dependsOn: ["patch-status"],
      },
    ]);
  });

  it("admitted at once: no Queued condition is ever written", () => {
    expect(conditionsOf(run({}))?.map((c) => c.type)).toEqual(["Ready"]);
  });

  it("Job complete: Ready False, Complete True (what kubectl wait --for=condition=Complete reads), Succeeded Event", () => {
    const running = agent()
      .running(T0, {
        conditions: [cond("Ready", "True", "Running", "running in Job agent-job-run-1", EARLIER)],
      })
      .build();
    const log = '{"type":"result","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":1}}';
    const actions = run({
      agent: running,
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      pod: { found: true, containerStatuses: [], agentLog: { available: true, text: log } },
    });
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "False", "Succeeded", "the run has finished"),
      cond("Complete", "True", "Succeeded", "the run succeeded (exit code 0)"),
    ]);
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Normal",
        reason: "Succeeded",
        note: "the run succeeded (exit code 0)",
        dependsOn: ["patch-status"],
      },
    ]);
  });

  it("a run charged its bound: CostBounded True with costNote, a CostBounded Warning (docs/cost-and-budgets.md#a-bill-within-bounds)", () => {
    const actions = run({
      agent: agent().running(T0).build(),
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      // "done" is no CLI line: the run spent time and left no readable usage.
      pod: { found: true, containerStatuses: [], agentLog: { available: true, text: "done" } },
    });
    const bounded = conditionsOf(actions)?.find((c) => c.type === "CostBounded");
    expect(bounded).toMatchObject({ status: "True", reason: "ChargedAtBound" });
    expect(bounded?.message.startsWith(MSG_USAGE_UNREAD)).toBe(true);
    expect(kubeEvents(actions).map((e) => e.reason)).toEqual(["CostBounded", "Succeeded"]);
  });

  it("Job failed: Failed True with the failure kind as reason and the failureReason as message, Warning Event", () => {
    const actions = run({
      agent: agent().running(T0).build(),
      job: {
        found: true,
        status: {
          conditions: [{ type: "Failed", status: "True", reason: "DeadlineExceeded", message: "too long" }],
        },
      },
      pod: { found: false },
    });
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "False", "Failed", "DeadlineExceeded: too long"),
      cond("Failed", "True", "JobFailed", "DeadlineExceeded: too long"),
    ]);
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Warning",
        reason: "Failed",
        note: "DeadlineExceeded: too long",
        dependsOn: ["patch-status"],
      },
    ]);
  });

  it("a missing Station fails at Pending: Failed MissingRef, and no Queued condition", () => {
    const actions = run({ station: undefined, definition: undefined });
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "False", "Failed", "Station st not found"),
      cond("Failed", "True", "MissingRef", "Station st not found"),
    ]);
    expect(kubeEvents(actions).map((e) => [e.type, e.reason, e.note])).toEqual([
      ["Warning", "Failed", "Station st not found"],
    ]);
  });

  it("conditions as the API server returns them (its own key order) are the same conditions: no write", () => {
    // The API server serialises each condition's fields in alphabetical order, not in ours.
    const served = (c: AgentCondition) =>
      Object.fromEntries(Object.entries(c).sort(([a], [b]) => a.localeCompare(b))) as AgentCondition;
    const written = conditionsOf(
      run({ agent: agent().running(T0).build(), job: { found: true, status: {} } }),
    );
    expect(written).toBeDefined();
    const running = agent()
      .running(T0)
      .status({ conditions: (written ?? []).map(served) })
      .build();
    expect(JSON.stringify(running.status?.conditions)).not.toBe(JSON.stringify(written));
    expect(run({ agent: running, job: { found: true, status: {} } })).toEqual([]);
  });

  it("a terminal Agent is never touched (terminal → terminal is a no-op)", () => {
    expect(run({ agent: agent().completed("Succeeded", T0).build() })).toEqual([]);
  });

  it("a Running Agent that lacks its conditions gets them once, without a Started Event", () => {
    const actions = run({ agent: agent().running(T0).build(), job: { found: true, status: {} } });
    expect(actions.map((a) => a.type)).toEqual(["patchStatus"]);
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "True", "Running", "running in Job agent-job-run-1"),
    ]);
    expect(statusPatch(actions)?.status.phase).toBeUndefined();
  });
});

describe("a rule's reportWaiting (a retried create or submit)", () => {
  const waitingDecision = (message: string) => ({
    rules: ["job-create-backoff"],
    actions: [
      {
        id: "report-waiting",
        type: "reportWaiting" as const,
        agent: REF,
        reason: "JobCreateRetrying",
        message,
        retryAt: NOW + 8000,
      },
    ],
  });

  it("becomes Ready=False with its reason and message, and a Warning Event once per new message", () => {
    const actions = report(input({ now: NOW }), waitingDecision("Job create failed: 503; retrying"), NOW_ISO);
    expect(actions[0]?.type).toBe("reportWaiting");
    expect(conditionsOf(actions)).toEqual([
      cond("Ready", "False", "JobCreateRetrying", "Job create failed: 503; retrying"),
    ]);
    expect(statusPatch(actions)?.status.phase).toBe("Pending");
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Warning",
        reason: "JobCreateRetrying",
        note: "Job create failed: 503; retrying",
        dependsOn: ["patch-status"],
      },
    ]);
    const shown = agent()
      .status({ phase: "Pending", conditions: conditionsOf(actions) ?? [] })
      .build();
    const again = report(
      input({ now: NOW + 1000, agent: shown }),
      waitingDecision("Job create failed: 503; retrying"),
      iso(NOW + 1000),
    );
    expect(again.map((a) => a.type)).toEqual(["reportWaiting"]);
  });
});

describe("the rules' own waits surface as the Ready condition and a Warning Event", () => {
  it.each<[string, Partial<ReconcileInput>]>([
    [
      "a Job creation retried after a 503",
      {
        jobCreateFailure: {
          permanent: false,
          message: "503 ServiceUnavailable: etcd leader changed",
          at: NOW - 500,
          attempts: 1,
        },
      },
    ],
    [
      "a batch submit retried after a 529",
      {
        definition: definition().batch().build(),
        agent: agent().finalizers(FIN).build(),
        batch: {
          submitFailure: { permanent: false, message: "529 overloaded_error", at: NOW - 500, attempts: 2 },
        },
      },
    ],
  ])("%s", (_name, over) => {
    const actions = run(over);
    const waiting = actions.find((a) => a.type === "reportWaiting");
    if (waiting?.type !== "reportWaiting") throw new Error("the rule reported no wait");
    expect(conditionsOf(actions)).toEqual([cond("Ready", "False", waiting.reason, waiting.message)]);
    expect(statusPatch(actions)?.status.phase).toBe("Pending");
    expect(kubeEvents(actions)).toEqual([
      {
        regarding: "run-1",
        type: "Warning",
        reason: waiting.reason,
        note: waiting.message,
        dependsOn: ["patch-status"],
      },
    ]);
  });
});

describe("mergeConditions (meta.SetStatusCondition)", () => {
  const d = (status: AgentCondition["status"], reason: string, message = "m"): DesiredCondition => ({
    type: "Ready",
    status,
    reason,
    message,
  });

  it.each<[string, AgentCondition[] | undefined, DesiredCondition[], AgentCondition[]]>([
    ["adds a new type", undefined, [d("True", "Running")], [cond("Ready", "True", "Running", "m")]],
    [
      "keeps lastTransitionTime when only reason or message change",
      [cond("Ready", "False", "Queued", "old", EARLIER)],
      [d("False", "JobCreateRetrying", "new")],
      [cond("Ready", "False", "JobCreateRetrying", "new", EARLIER)],
    ],
    [
      "moves lastTransitionTime when the status changes",
      [cond("Ready", "False", "Queued", "m", EARLIER)],
      [d("True", "Running")],
      [cond("Ready", "True", "Running", "m")],
    ],
    [
      "keeps other types and their order",
      [
        cond("Queued", "True", "WaitingForSlot", "q", EARLIER),
        cond("Ready", "False", "Queued", "q", EARLIER),
      ],
      [d("True", "Running")],
      [cond("Queued", "True", "WaitingForSlot", "q", EARLIER), cond("Ready", "True", "Running", "m")],
    ],
    [
      "an onlyIfPresent condition is not added",
      undefined,
      [{ ...d("False", "Started"), type: "Queued", onlyIfPresent: true }],
      [],
    ],
  ])("%s", (_name, current, desired, expected) => {
    expect(mergeConditions(current, desired, NOW_ISO, undefined)).toEqual(expected);
  });

  it("caps the message at 32768 bytes", () => {
    const [c] = mergeConditions(undefined, [d("False", "Failed", "é".repeat(20_000))], NOW_ISO, 1);
    expect(Buffer.byteLength(c?.message ?? "")).toBeLessThanOrEqual(32768);
  });
});

describe("reasons", () => {
  it.each([
    ["job_failed", "JobFailed"],
    ["missing_ref", "MissingRef"],
    ["batch_timeout", "BatchTimeout"],
    [undefined, "Failed"],
  ] as const)("failure kind %s → %s", (kind, reason) => {
    expect(reasonFromKind(kind)).toBe(reason);
  });

  it.each([
    ["JobCreateRetrying", "JobCreateRetrying"],
    ["job-create retrying!", "jobcreateretrying"],
    ["429Throttled", "Waiting429Throttled"],
    ["Retry:", "Retry"],
  ])("a condition reason from %j is %j (metav1.Condition's pattern)", (raw, reason) => {
    expect(conditionReason(raw)).toBe(reason);
    expect(reason).toMatch(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/);
  });
});
