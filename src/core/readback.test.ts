import { describe, expect, it } from "vitest";
import type { JobObservation, PodObservation } from "./input.js";
import { jobState, MSG_JOB_GC, MSG_POD_GC, type TerminalResult, terminalFromJob } from "./readback.js";

const complete: JobObservation = {
  found: true,
  status: { conditions: [{ type: "Complete", status: "True" }], succeeded: 1 },
};
const failedBackoff: JobObservation = {
  found: true,
  status: {
    conditions: [
      {
        type: "Failed",
        status: "True",
        reason: "BackoffLimitExceeded",
        message: "Job has reached the specified backoff limit",
      },
    ],
    failed: 1,
  },
};
const failedDeadline: JobObservation = {
  found: true,
  status: {
    conditions: [
      {
        type: "Failed",
        status: "True",
        reason: "DeadlineExceeded",
        message: "Job was active longer than specified deadline",
      },
    ],
  },
};
const log =
  '{"type":"system","subtype":"init","session_id":"s-1"}\n{"type":"result","is_error":false,"session_id":"s-1"}';
const pod = (
  exitCode: number | undefined,
  extra: Partial<Extract<PodObservation, { found: true }>> = {},
): PodObservation => ({
  found: true,
  containerStatuses:
    exitCode === undefined
      ? []
      : [
          {
            name: "agent",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode } },
          },
        ],
  agentLog: { available: true, text: log },
  ...extra,
});

describe("jobState (runtime.md §12)", () => {
  it.each([
    ["404", { found: false }, { state: "gone" }],
    ["no status", { found: true }, { state: "running" }],
    ["Complete", complete, { state: "succeeded" }],
    [
      "Failed condition: <reason>: <message>",
      failedBackoff,
      {
        state: "failed",
        reason: "BackoffLimitExceeded: Job has reached the specified backoff limit",
        conditionReason: "BackoffLimitExceeded",
      },
    ],
    ["succeeded counter", { found: true, status: { succeeded: 1 } }, { state: "succeeded" }],
    ["failed counter", { found: true, status: { failed: 1 } }, { state: "failed", reason: "Job failed" }],
    [
      "condition False is ignored",
      { found: true, status: { conditions: [{ type: "Failed", status: "False" }] } },
      { state: "running" },
    ],
  ] as [string, JobObservation, unknown][])("%s", (_n, job, want) => {
    expect(jobState(job)).toEqual(want);
  });
});

describe("terminalFromJob", () => {
  type Row = [string, JobObservation, PodObservation | undefined, Partial<TerminalResult>];
  const rows: Row[] = [
    [
      "success reads output, sessionId; exitCode 0",
      complete,
      pod(0),
      { phase: "Succeeded", exitCode: 0, output: log, sessionId: "s-1" },
    ],
    [
      "success with pod gone keeps Succeeded and records the read-back failure",
      complete,
      { found: false },
      {
        phase: "Succeeded",
        exitCode: 0,
        output: "",
        failureReason: MSG_POD_GC,
        failureKind: "output_unavailable",
      },
    ],
    [
      "success with log unreadable",
      complete,
      pod(0, { agentLog: { available: false } }),
      { phase: "Succeeded", exitCode: 0, output: "", failureReason: MSG_POD_GC },
    ],
    [
      "failure with pod gone keeps the Job-level reason, exitCode 1",
      failedDeadline,
      { found: false },
      {
        phase: "Failed",
        exitCode: 1,
        output: "",
        failureReason: "DeadlineExceeded: Job was active longer than specified deadline",
        failureKind: "job_failed",
      },
    ],
    [
      "agent exit code is reported (OQ-24)",
      failedBackoff,
      pod(3),
      { phase: "Failed", exitCode: 3, failureReason: "agent exited with code 3", output: log },
    ],
    [
      "exit 124 is the deadline",
      failedBackoff,
      pod(124),
      { exitCode: 124, failureReason: "run deadline exceeded" },
    ],
    [
      "Failed never reports 0 even if the container says 0",
      failedBackoff,
      pod(0),
      {
        phase: "Failed",
        exitCode: 1,
        failureReason: "BackoffLimitExceeded: Job has reached the specified backoff limit",
      },
    ],
    [
      "a kubelet-side reason is kept over the exit code",
      failedDeadline,
      pod(137),
      { exitCode: 137, failureReason: "DeadlineExceeded: Job was active longer than specified deadline" },
    ],
    [
      "init failure names the init's last line (OQ-23)",
      failedBackoff,
      pod(undefined, {
        initContainerStatuses: [
          {
            name: "init",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 1, message: "[init] files: notes/brief.md: HTTP 404" } },
          },
        ],
      }),
      { exitCode: 1, failureReason: "init failed: [init] files: notes/brief.md: HTTP 404" },
    ],
    [
      "delivery failure (OQ-49) and prUrl from the courier log",
      failedBackoff,
      pod(0, {
        courierLog: {
          available: true,
          text: '{"kind":"delivery","status":"succeeded","url":"https://github.com/o/r/pull/9"}\n{"kind":"delivery","status":"failed","reason":"push"}',
        },
      }),
      { exitCode: 1, failureReason: "delivery failed: push", prUrl: "https://github.com/o/r/pull/9" },
    ],
    [
      "Job garbage-collected",
      { found: false },
      undefined,
      {
        phase: "Failed",
        exitCode: 1,
        output: "",
        failureReason: MSG_JOB_GC,
        failureKind: "output_unavailable",
      },
    ],
  ];
  it.each(rows)("%s", (_n, job, p, want) => {
    const state = jobState(job);
    if (state.state === "running") throw new Error("row must be finished");
    expect(terminalFromJob(state, p, "claude", 262144)).toMatchObject(want);
  });

  it("writes no sessionId when the log announces none (a live-patched id is kept)", () => {
    const state = jobState(complete);
    if (state.state === "running") throw new Error("unreachable");
    const r = terminalFromJob(
      state,
      pod(0, { agentLog: { available: true, text: "plain text" } }),
      "claude",
      1000,
    );
    expect(r).not.toHaveProperty("sessionId");
  });

  it("the exact GC messages", () => {
    expect(MSG_POD_GC).toBe("run output unavailable: pod garbage-collected");
    expect(MSG_JOB_GC).toBe("run record unavailable: Job garbage-collected before its result was observed");
  });

  it("caps the output but reads the sessionId from the uncapped log", () => {
    const state = jobState(complete);
    if (state.state === "running") throw new Error("unreachable");
    const r = terminalFromJob(state, pod(0), "claude", 20);
    expect(r.output).toBe(`...[truncated ${Buffer.byteLength(log) - 20} bytes]...\n${log.slice(-20)}`);
    expect(r.sessionId).toBe("s-1");
  });
});
