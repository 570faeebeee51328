/**
 * The Running, a provider batch rules (running-batch.ts), one row per case. A Running batch: polls,
 * results, timeouts (fail or fallback) and the fallback Job, batch disabled, a run that outlives its
 * definition (docs/decisions.md D-104).
 */
import { agent, input, iso, station, T0 } from "../../../test/support/core-builders.js";
import {
  batchDef,
  cancelAction,
  cliItems,
  completed,
  createJobAction,
  DAY,
  describeRules,
  duration,
  ended,
  events,
  failure,
  inFlight,
  JOB,
  lifecycle,
  NOW,
  NOW_ISO,
  OUTPUT,
  patch,
  pollAction,
  RECORDED,
  type Row,
  removeFinalizerAction,
} from "../../../test/support/state-machine-rows.js";
import * as runningBatch from "./running-batch.js";

/** In flight 10 minutes with a recorded 10-minute timeout. */
const recordedInFlight = (onTimeout = "fail") =>
  inFlight({
    startedAt: iso(NOW - 10 * 60_000),
    batchSubmission: { ...RECORDED, timeoutMinutes: 10, onTimeout },
  });

/** A batch result that succeeded, `seconds` after the start. */
const resultSucceeded = (seconds: number) => [
  patch({ phase: "Succeeded", exitCode: 0, completedAt: NOW_ISO, output: OUTPUT }),
  events("event-terminal", [...cliItems, lifecycle("succeeded", { exitCode: 0 })]),
  completed("Succeeded", "0"),
  duration("Succeeded", seconds),
];

/** A run failed by its batch timeout; agent/failed only goes out when a definition names the sinks. */
const timedOut = ({ seconds = 86400, sinks = true, reason = "batch timed out" } = {}) => [
  patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: reason }),
  ...(sinks
    ? [events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })])]
    : []),
  completed("Failed", "1"),
  duration("Failed", seconds),
  failure("batch_timeout"),
];

const ROWS: Row[] = [
  {
    name: "batch in flight, poll due",
    in: { agent: inFlight().build(), definition: batchDef().build(), batch: { lastPollAt: NOW - 60_000 } },
    rules: ["batch-poll", "finalizer-wait"],
    actions: [pollAction],
  },
  {
    name: "BATCH_POLL_SECONDS=0 polls on every reconcile, but not twice within a second (the same pass)",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      settings: { ...input().settings, batchPollSeconds: 0 },
      batch: { lastPollAt: NOW - 999, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-pending", "finalizer-wait"],
    actions: [],
  },
  {
    name: "BATCH_POLL_SECONDS=0, last poll a second ago: poll",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      settings: { ...input().settings, batchPollSeconds: 0 },
      batch: { lastPollAt: NOW - 1000, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-poll", "finalizer-wait"],
    actions: [pollAction],
  },
  {
    name: "batch in flight, polled recently: nothing",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW - 59_000, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-pending", "finalizer-wait"],
    actions: [],
  },
  {
    name: "batch result succeeded: Succeeded, exitCode 0, output = CLI lines; then lines and agent/succeeded",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: ended("succeeded") },
    },
    rules: ["batch-result", "finalizer-wait"],
    actions: resultSucceeded(60),
  },
  {
    name: "batch result failed: Failed, exitCode 1, provider message; agent/failed batch_failed",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: ended("failed", "invalid_request_error: prompt is too long") },
    },
    rules: ["batch-result", "finalizer-wait"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        output: OUTPUT,
        failureReason: "invalid_request_error: prompt is too long",
      }),
      events("event-terminal", [...cliItems, lifecycle("failed", { exitCode: 1, reason: "batch_failed" })]),
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("batch_failed"),
    ],
  },
  {
    name: "timeout reached, no poll since the deadline: one final poll first",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW - 1000 },
    },
    rules: ["batch-final-poll", "finalizer-wait"],
    actions: [pollAction],
  },
  {
    name: "timeout with a result in the same pass: the result wins",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      batch: { lastPollAt: NOW, pollResult: ended("succeeded") },
    },
    rules: ["batch-result", "finalizer-wait"],
    actions: resultSucceeded(86400),
  },
  {
    name: "timeout with onTimeout fail (default 1440 min): cancel; Failed `batch timed out`; agent/failed batch_timeout",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [cancelAction, ...timedOut()],
  },
  {
    name: "timeout reconciled again before its patch is visible: the cancel that succeeded is not sent twice",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" }, cancelledAt: NOW },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: timedOut(),
  },
  {
    name: "timeout with fallback and a free slot: cancel, create the Job, patch batchFallback + jobName, agent/running",
    in: {
      agent: inFlight({ startedAt: iso(NOW - 720 * 60_000) }).build(),
      definition: batchDef()
        .spec({ batch: { timeoutMinutes: 720, onTimeout: "fallback" } })
        .build(),
      batch: { lastPollAt: NOW },
    },
    rules: ["batch-timeout-fallback", "finalizer-wait"],
    actions: [
      cancelAction,
      createJobAction(),
      patch({ batchFallback: true, jobName: JOB }, { dependsOn: ["create-job"] }),
      events("event-timeout", [lifecycle("running", { reason: "batch_timeout" })]),
    ],
  },
  {
    name: "timeout with fallback at a full Station: patch batchFallback only and wait",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      station: station().spec({ maxConcurrentRuns: 1 }).build(),
      stationAgents: [agent("other").running(T0).build()],
      batch: { lastPollAt: NOW },
    },
    rules: ["batch-timeout-fallback", "finalizer-wait"],
    actions: [
      cancelAction,
      patch({ batchFallback: true }),
      events("event-timeout", [lifecycle("running", { reason: "batch_timeout" })]),
    ],
  },
  {
    name: "fallback waiting, slot freed: create the Job and record jobName (cleanup runs alongside)",
    in: {
      agent: inFlight({ batchFallback: true }).build(),
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      batch: { lastCleanupAt: NOW - 1000 },
    },
    rules: ["fallback-start", "finalizer-wait"],
    actions: [createJobAction(), patch({ jobName: JOB }, { dependsOn: ["create-job"] })],
  },
  {
    name: "batch disabled while in flight: Failed with the seed message, agent/failed, finalizer released without provider calls",
    in: {
      agent: inFlight().build(),
      definition: batchDef().build(),
      settings: { ...input().settings, batchEnabled: false },
    },
    rules: ["batch-disabled"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        failureReason: "batch execution is disabled on this controller",
      }),
      events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_disabled" })]),
      removeFinalizerAction({ dependsOn: ["patch-status"] }),
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("batch_failed"),
    ],
  },
  {
    name: "fallback waiting at a full Station: nothing",
    in: {
      agent: inFlight({ batchFallback: true }).build(),
      definition: batchDef()
        .spec({ batch: { onTimeout: "fallback" } })
        .build(),
      station: station().spec({ concurrencyPolicy: "Forbid" }).build(),
      stationAgents: [agent("other").running(T0).build()],
      batch: { lastCleanupAt: NOW - 1000 },
    },
    rules: ["fallback-wait", "finalizer-wait"],
    actions: [],
  },
  {
    name: "batch in flight whose definition is gone: cannot poll, waits",
    in: { agent: inFlight().build(), definition: undefined },
    rules: ["batch-wait-definition", "finalizer-wait"],
    actions: [],
  },
  {
    name: "definition gone mid-run, submission recorded: the run times out by its own deadline and cancels",
    in: {
      agent: recordedInFlight().build(),
      definition: undefined,
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [cancelAction, ...timedOut({ seconds: 600, sinks: false })],
  },
  {
    name: "definition changed to a 24 h timeout mid-run: the recorded 10 minutes still apply",
    in: {
      agent: recordedInFlight().build(),
      definition: batchDef()
        .spec({ batch: { timeoutMinutes: 1440, onTimeout: "fallback" } })
        .build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [cancelAction, ...timedOut({ seconds: 600 })],
  },
  {
    name: "definition gone, onTimeout fallback recorded: cancel and fail, no Job can be built",
    in: {
      agent: recordedInFlight("fallback").build(),
      definition: undefined,
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fallback", "finalizer-wait"],
    actions: [
      cancelAction,
      ...timedOut({
        seconds: 600,
        sinks: false,
        reason: "batch timed out; the fallback Job cannot start: AgentDefinition def not found",
      }),
    ],
  },
  {
    name: "definition gone, submission recorded: the batch is still polled with the recorded model",
    in: { agent: inFlight({ batchSubmission: RECORDED }).build(), definition: undefined },
    rules: ["batch-poll", "finalizer-wait"],
    actions: [pollAction],
  },
  {
    name: "the timeout's cancel failed 1 s ago: the Failed patch goes, the cancel waits for the finalizer's retry",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" }, lastCleanupAt: NOW - 1000 },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: timedOut(),
  },
];

describeRules("Running, a provider batch rules", ROWS, runningBatch);
