import { describe, expect, it } from "vitest";
import type { JobObservation, PodObservation } from "../input.js";
import {
  initFailedBeforeAgent,
  initFailureLine,
  jobState,
  MSG_JOB_GC,
  MSG_POD_GC,
  type TerminalResult,
  terminalFromJob,
} from "./readback.js";

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

describe("jobState (docs/run-pod.md#what-the-controller-reads-back)", () => {
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
      // Kubernetes ≥ 1.31: the interim condition comes first and carries the reason; the counters
      // move before the final Failed condition and must not turn it into the generic "Job failed".
      "FailureTarget before Failed, counters already moved",
      {
        found: true,
        status: {
          conditions: [
            {
              type: "FailureTarget",
              status: "True",
              reason: "DeadlineExceeded",
              message: "Job was active longer than specified deadline",
            },
          ],
          failed: 1,
        },
      },
      {
        state: "failed",
        reason: "DeadlineExceeded: Job was active longer than specified deadline",
        conditionReason: "DeadlineExceeded",
      },
    ],
    [
      "SuccessCriteriaMet before Complete",
      {
        found: true,
        status: {
          conditions: [{ type: "SuccessCriteriaMet", status: "True", reason: "CompletionsReached" }],
        },
      },
      { state: "succeeded" },
    ],
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
      "agent exit code is reported (docs/decisions.md D-24)",
      failedBackoff,
      pod(3),
      { phase: "Failed", exitCode: 3, failureReason: "agent exited with code 3", output: log },
    ],
    [
      "the CLI's own error message is named with its vendor",
      failedBackoff,
      pod(1, {
        agentLog: {
          available: true,
          text: '{"type":"system","subtype":"init","session_id":"s-1"}\n{"type":"result","is_error":true,"result":"Invalid API key · Fix external API key"}',
        },
      }),
      {
        phase: "Failed",
        exitCode: 1,
        failureReason: "claude exited with code 1: Invalid API key · Fix external API key",
      },
    ],
    [
      "exit 124 is the deadline",
      failedBackoff,
      pod(124),
      { exitCode: 124, failureReason: "run deadline exceeded" },
    ],
    [
      "exit 124 after waiting for the provider: the reason names the provider's last answer",
      failedBackoff,
      pod(124, {
        agentLog: {
          available: true,
          text: '{"kind":"provider-limit","provider":"anthropic","status":529,"retry":3,"waitSeconds":20,"at":"2026-01-01T00:00:00.000Z","reason":"overloaded","message":"Overloaded"}',
        },
      }),
      {
        exitCode: 124,
        failureReason: "run deadline exceeded; the provider's last answer: anthropic 529: Overloaded",
      },
    ],
    [
      "exit 124 when the deadline left no room for a first wait: the CLI's last error carries the provider's words",
      failedBackoff,
      pod(124, {
        agentLog: {
          available: true,
          text: '{"type":"result","is_error":true,"result":"API Error: Request rejected (429) · slow down"}',
        },
      }),
      {
        exitCode: 124,
        failureReason:
          "run deadline exceeded; the provider's last answer: API Error: Request rejected (429) · slow down",
      },
    ],
    [
      "the kubelet reports the agent container OOMKilled: the reason says out of memory",
      failedBackoff,
      pod(137, {
        containerStatuses: [
          {
            name: "agent",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 137, reason: "OOMKilled" } },
          },
        ],
      }),
      {
        exitCode: 137,
        failureReason:
          "agent container out of memory (OOMKilled, exit code 137): raise the agent container's memory limit in the Station's template",
      },
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
      "init failure names the init's last line (docs/decisions.md D-23)",
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
      "init failure: the cause, even when the init/failed event (stdout) landed after it (stderr)",
      failedBackoff,
      pod(undefined, {
        initContainerStatuses: [
          {
            name: "init",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: {
              terminated: {
                exitCode: 1,
                message:
                  '{"kind":"lifecycle","phase":"init","status":"started"}\n' +
                  "[init] conversation: cannot restore session s-1: no saved conversation (HTTP 404)\n" +
                  '{"kind":"lifecycle","phase":"init","status":"failed","tool":"conversation","reason":"restore"}\n',
              },
            },
          },
        ],
      }),
      {
        exitCode: 1,
        failureReason:
          "init failed: [init] conversation: cannot restore session s-1: no saved conversation (HTTP 404)",
      },
    ],
    [
      "the agent never ran: output is the tail of the init log (docs/decisions.md D-23)",
      failedBackoff,
      pod(undefined, {
        agentLog: { available: false },
        initContainerStatuses: [
          {
            name: "init",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 2, message: "[init] clone failed" } },
          },
        ],
        initLog: { available: true, text: "[init] cloning o/r\n[init] clone failed\n" },
      }),
      {
        exitCode: 2,
        failureReason: "init failed: [init] clone failed",
        output: "[init] cloning o/r\n[init] clone failed\n",
      },
    ],
    [
      "success whose log kept failing to read says so, never 'pod garbage-collected'",
      complete,
      pod(0, { agentLog: { available: false, error: "503 Service Unavailable" } }),
      {
        phase: "Succeeded",
        output: "",
        failureReason: "run output unavailable: pod log could not be read: 503 Service Unavailable",
        failureKind: "output_unavailable",
      },
    ],
    [
      "delivery failure (docs/decisions.md D-49) and prUrl from the courier log",
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

  describe("item 5: an agent-written id outside its bounds is dropped whole, and failureReason says why", () => {
    const done = () => {
      const state = jobState(complete);
      if (state.state === "running") throw new Error("unreachable");
      return state;
    };
    const withSession = (id: string) =>
      pod(0, {
        agentLog: { available: true, text: `${JSON.stringify({ type: "result", session_id: id })}\n` },
      });

    it("M3: a 1 MiB session id is not recorded, the run still Succeeded with its output", () => {
      const r = terminalFromJob(done(), withSession("s".repeat(1024 * 1024)), "claude", 1000);
      expect(r.phase).toBe("Succeeded");
      expect(r).not.toHaveProperty("sessionId");
      expect(r.failureReason).toMatch(/^status\.sessionId not recorded: .*1048576 characters/);
      expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(1000);
      // A 4 MiB one is on a line too long to read at all (MAX_LINE_BYTES): no id either.
      expect(terminalFromJob(done(), withSession("s".repeat(4 << 20)), "claude", 1000)).not.toHaveProperty(
        "sessionId",
      );
    });

    it("an id with a newline is not recorded; on a failed run the note follows the failure's reason", () => {
      const r = terminalFromJob(jobState(failedBackoff) as never, withSession("a\nb"), "claude", 1000);
      expect(r).not.toHaveProperty("sessionId");
      expect(r.failureReason).toMatch(/; status\.sessionId not recorded: /);
    });

    it("opencode's ses_… id passes", () => {
      const log = `${JSON.stringify({ type: "step_start", sessionID: "ses_3f2a9c1b7e0dFFabc123" })}\n`;
      const r = terminalFromJob(
        done(),
        pod(0, { agentLog: { available: true, text: log } }),
        "opencode",
        1000,
      );
      expect(r.sessionId).toBe("ses_3f2a9c1b7e0dFFabc123");
      expect(r.failureReason).toBeUndefined();
    });

    it("a prUrl that is not a URL is not recorded", () => {
      const courierLog = {
        available: true as const,
        text: '{"kind":"delivery","status":"opened","url":"javascript:x"}',
      };
      const r = terminalFromJob(done(), pod(0, { courierLog }), "claude", 1000);
      expect(r).not.toHaveProperty("prUrl");
      expect(r.failureReason).toMatch(/status\.prUrl not recorded/);
    });
  });

  it("the exact GC messages", () => {
    expect(MSG_POD_GC).toBe("run output unavailable: pod garbage-collected");
    expect(MSG_JOB_GC).toBe("run record unavailable: Job garbage-collected before its result was observed");
  });

  it("caps the output but reads the sessionId from the uncapped log", () => {
    const state = jobState(complete);
    if (state.state === "running") throw new Error("unreachable");
    const r = terminalFromJob(state, pod(0), "claude", 60);
    expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(60);
    expect(r.output).toMatch(/^\.\.\.\[truncated \d+ bytes\]\.\.\.\n/);
    expect(log.endsWith(r.output.slice(r.output.indexOf("\n") + 1))).toBe(true);
    expect(r.sessionId).toBe("s-1");
  });
});

describe("initFailedBeforeAgent (docs/decisions.md D-23: when to read the init log)", () => {
  const status = (name: string, state: object) => ({
    name,
    image: "i",
    imageID: "",
    ready: false,
    restartCount: 0,
    state,
  });
  it.each([
    [
      "init failed, agent waiting",
      [status("agent", { waiting: {} })],
      [status("init", { terminated: { exitCode: 1 } })],
      true,
    ],
    ["init failed, no agent status", undefined, [status("init", { terminated: { exitCode: 1 } })], true],
    [
      "init succeeded",
      [status("agent", { terminated: { exitCode: 1 } })],
      [status("init", { terminated: { exitCode: 0 } })],
      false,
    ],
    [
      "agent ran",
      [status("agent", { terminated: { exitCode: 3 } })],
      [status("init", { terminated: { exitCode: 1 } })],
      false,
    ],
    ["init still running", [], [status("init", { running: {} })], false],
  ])("%s", (_n, containers, inits, want) => {
    expect(initFailedBeforeAgent(containers as never, inits as never)).toBe(want);
  });
});

describe("initFailureLine (docs/decisions.md D-23: the cause, not an event)", () => {
  it.each([
    ["[init] a\n[init] b\n", "[init] b"],
    ['[init] cause\n{"kind":"lifecycle","phase":"init","status":"failed"}', "[init] cause"],
    [
      '{"kind":"lifecycle","phase":"init","status":"failed"}',
      '{"kind":"lifecycle","phase":"init","status":"failed"}',
    ],
    [
      '[init] cause\n{"level":"warn","msg":"sink down","component":"sinks"}',
      '{"level":"warn","msg":"sink down","component":"sinks"}',
    ],
    ["", ""],
  ])("%j ⇒ %j", (message, line) => {
    expect(initFailureLine(message)).toBe(line);
  });
});
