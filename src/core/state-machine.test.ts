import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, NS, station, T0 } from "../../test/support/core-builders.js";
import type { Action } from "./actions.js";
import type { ReconcileInput } from "./input.js";
import { decide, reconcile } from "./state-machine.js";

const NOW = T0 + 60_000;
const NOW_ISO = iso(NOW);
const REF = { namespace: NS, name: "run-1", uid: "uid-run-1" };
const FIN = "agents.re-cinq.com/batch-cleanup";
const KEY = { secretName: "agent-secrets", secretKey: "anthropic-key" };
const SINK = [{ type: "http", url: "https://sink.example/hook" }];
const SOURCE = { agent: "run-1", station: "st", namespace: NS };

/** Jobs are pinned in job-builder.test.ts; here only their name matters. */
function summarize(actions: Action[]): unknown[] {
  return actions.map((a) => (a.type === "createJob" ? { ...a, job: a.job.metadata?.name } : a));
}

const patch = (status: Record<string, unknown>, extra: Partial<Action> = {}) => ({
  id: "patch-status",
  type: "patchStatus",
  agent: REF,
  resourceVersion: "100",
  status,
  ...extra,
});
const completed = (phase: string, exit: string) => ({
  id: "metric-completed",
  type: "recordMetric",
  metric: { name: "controller_runs_completed_total", labels: { phase, exit_code: exit } },
  dependsOn: ["patch-status"],
});
const duration = (phase: string, value: number) => ({
  id: "metric-duration",
  type: "recordMetric",
  metric: { name: "controller_run_duration_seconds", labels: { phase }, value },
  dependsOn: ["patch-status"],
});
const failure = (kind: string) => ({
  id: "metric-failure",
  type: "recordMetric",
  metric: { name: "controller_run_failures_total", labels: { kind } },
  dependsOn: ["patch-status"],
});
const failedAtPending = (reason: string, kind: string) => [
  patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: reason }),
  completed("Failed", "1"),
  failure(kind),
];
const events = (id: string, items: unknown[], vendor = "claude") => ({
  id,
  type: "emitSinkEvents",
  agent: REF,
  source: SOURCE,
  sinks: SINK,
  select: [],
  vendor,
  items,
  dependsOn: ["patch-status"],
});
const lifecycle = (status: string, extra: Record<string, unknown> = {}) => ({
  type: "lifecycle",
  event: { kind: "lifecycle", phase: "agent", status, ...extra },
});

const batchDef = () => definition().batch();
const inFlight = (extra: Record<string, unknown> = {}) =>
  agent()
    .finalizers(FIN)
    .status({
      phase: "Running",
      batchId: "msgbatch_1",
      batchProvider: "anthropic",
      startedAt: iso(T0),
      ...extra,
    });
const ended = (outcome: "succeeded" | "failed", failureReason?: string) => ({
  state: "ended" as const,
  outcome,
  lines: ['{"type":"system","subtype":"init"}', '{"type":"result","is_error":false}'],
  ...(failureReason ? { failureReason } : {}),
});
const cliItems = [
  { type: "cliLine", line: '{"type":"system","subtype":"init"}' },
  { type: "cliLine", line: '{"type":"result","is_error":false}' },
];
const OUTPUT = '{"type":"system","subtype":"init"}\n{"type":"result","is_error":false}';
const DAY = 24 * 3600_000;

interface Row {
  name: string;
  in: Partial<ReconcileInput>;
  rules: string[];
  actions: unknown[];
}

// ---- submit failures (docs/decisions.md D-101), a run outliving its definition (D-104), cancels
// retried until confirmed and counted on delete (D-102, D-103).
const RECORDED = {
  keyRef: "anthropic-key",
  model: "claude-sonnet-4-6",
  timeoutMinutes: 1440,
  onTimeout: "fail",
};
const cancelAction = {
  id: "cancel-batch",
  type: "cancelBatch",
  agent: REF,
  provider: "anthropic",
  batchId: "msgbatch_1",
  apiKey: KEY,
};
const cleanupAfterCancel = {
  id: "cleanup-batch",
  type: "cleanupBatch",
  agent: REF,
  provider: "anthropic",
  batchId: "msgbatch_1",
  apiKey: KEY,
  dependsOn: ["cancel-batch"],
};
const countedCleanupFailure = (attempts: number) => [
  patch({ batchCleanupAttempts: attempts }, { id: "patch-cleanup-attempts" }),
  {
    id: "metric-cleanup-failure",
    type: "recordMetric",
    metric: { name: "controller_batch_cleanup_failures_total" },
  },
];
const SUBMIT_401 = "anthropic POST /v1/messages/batches: HTTP 401: authentication_error: invalid x-api-key";
const SUBMIT_529 = "anthropic POST /v1/messages/batches: HTTP 529: overloaded_error: Overloaded";
const waiting = (attempt: number, retryAt: number, message: string) => ({
  id: "report-waiting",
  type: "reportWaiting",
  agent: REF,
  reason: "BatchSubmitRetrying",
  message: `batch submit failed (attempt ${attempt}), retrying at ${iso(retryAt).replace(".000Z", "Z")}: ${message}`,
  retryAt,
});

const SUBMIT_FAILURE_ROWS: Row[] = [
  {
    name: "deleted while an OpenAI submit waits for its retry: discard the upload, release the finalizer",
    in: {
      agent: agent().finalizers(FIN).deleting().spec({ model: "gpt-5-mini" }).build(),
      definition: batchDef()
        .spec({ resources: { secrets: [{ name: "OPENAI_API_KEY", ref: "openai-key" }] } })
        .build(),
      batch: {
        submitFailure: {
          permanent: false,
          message: "503",
          at: NOW - 1000,
          attempts: 1,
          inputFileId: "file-1",
        },
      },
    },
    rules: ["release-no-batch"],
    actions: [
      {
        id: "discard-upload",
        type: "discardUpload",
        agent: REF,
        provider: "openai",
        fileId: "file-1",
        apiKey: { secretName: "agent-secrets", secretKey: "openai-key" },
      },
      { id: "remove-finalizer", type: "removeFinalizer", agent: REF, finalizer: FIN, index: 0 },
    ],
  },
  {
    name: "submit refused with a 4xx (bad key): Failed, the reason quotes the provider",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: batchDef().build(),
      batch: { submitFailure: { permanent: true, message: SUBMIT_401, at: NOW - 1000, attempts: 1 } },
    },
    rules: ["batch-submit-rejected", "finalizer-wait"],
    actions: failedAtPending(`batch submit failed: ${SUBMIT_401}`, "batch_failed"),
  },
  {
    name: "key missing from agent-secrets: Failed, the reason names the key",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: batchDef().build(),
      batch: {
        submitFailure: {
          permanent: true,
          message: "key anthropic-key of Secret agent-secrets not found",
          at: NOW - 1000,
          attempts: 1,
        },
      },
    },
    rules: ["batch-submit-rejected", "finalizer-wait"],
    actions: failedAtPending(
      "batch submit failed: key anthropic-key of Secret agent-secrets not found",
      "batch_failed",
    ),
  },
  {
    name: "submit failed transiently (529), second attempt: wait 30 s and say why",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: batchDef().build(),
      batch: { submitFailure: { permanent: false, message: SUBMIT_529, at: NOW - 5000, attempts: 2 } },
    },
    rules: ["batch-submit-backoff", "finalizer-wait"],
    actions: [waiting(2, NOW + 25_000, SUBMIT_529)],
  },
  {
    name: "submit throttled (429) with Retry-After 120 s: the wait honours it over the 15 s backoff",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: batchDef().build(),
      batch: {
        submitFailure: {
          permanent: false,
          message: "429",
          at: NOW - 60_000,
          attempts: 1,
          retryAfterMs: 120_000,
        },
      },
    },
    rules: ["batch-submit-backoff", "finalizer-wait"],
    actions: [waiting(1, NOW + 60_000, "429")],
  },
  {
    name: "OpenAI submit retry due: the file the failed attempt uploaded is reused",
    in: {
      agent: agent()
        .finalizers(FIN)
        .spec({ model: "gpt-5-mini", parameters: { ticket: "T-1" } })
        .build(),
      definition: batchDef()
        .spec({ resources: { secrets: [{ name: "OPENAI_API_KEY", ref: "openai-key" }] } })
        .build(),
      batch: {
        submitFailure: {
          permanent: false,
          message: "503",
          at: NOW - 15_000,
          attempts: 1,
          inputFileId: "file-1",
        },
      },
    },
    rules: ["batch-submit", "finalizer-wait"],
    actions: [
      {
        id: "submit-batch",
        type: "submitBatch",
        agent: REF,
        provider: "openai",
        apiKey: { secretName: "agent-secrets", secretKey: "openai-key" },
        request: {
          agentUid: "uid-run-1",
          model: "gpt-5-mini",
          prompt: "Fix T-1.",
          maxTokens: 16000,
          inputFileId: "file-1",
        },
      },
    ],
  },
];

/** In flight 10 minutes with a recorded 10-minute timeout. */
const recordedInFlight = (onTimeout = "fail") =>
  inFlight({
    startedAt: iso(NOW - 10 * 60_000),
    batchSubmission: { ...RECORDED, timeoutMinutes: 10, onTimeout },
  });

const OUTLIVES_DEFINITION_ROWS: Row[] = [
  {
    name: "definition gone mid-run, submission recorded: the run times out by its own deadline and cancels",
    in: {
      agent: recordedInFlight().build(),
      definition: undefined,
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [
      cancelAction,
      patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: "batch timed out" }),
      completed("Failed", "1"),
      duration("Failed", 600),
      failure("batch_timeout"),
    ],
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
    actions: [
      cancelAction,
      patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: "batch timed out" }),
      events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })]),
      completed("Failed", "1"),
      duration("Failed", 600),
      failure("batch_timeout"),
    ],
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
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        failureReason: "batch timed out; the fallback Job cannot start: AgentDefinition def not found",
      }),
      completed("Failed", "1"),
      duration("Failed", 600),
      failure("batch_timeout"),
    ],
  },
  {
    name: "definition gone, submission recorded: the batch is still polled with the recorded model",
    in: { agent: inFlight({ batchSubmission: RECORDED }).build(), definition: undefined },
    rules: ["batch-poll", "finalizer-wait"],
    actions: [
      {
        id: "poll-batch",
        type: "pollBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
        ctx: { agentUid: "uid-run-1", model: "claude-sonnet-4-6" },
      },
    ],
  },
  {
    name: "the timeout's cancel failed 1 s ago: the Failed patch goes, the cancel waits for the finalizer's retry",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" }, lastCleanupAt: NOW - 1000 },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [
      patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: "batch timed out" }),
      events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })]),
      completed("Failed", "1"),
      duration("Failed", 86400),
      failure("batch_timeout"),
    ],
  },
];

const timedOut = () => inFlight({ phase: "Failed", failureReason: "batch timed out" });

const CANCEL_RETRY_ROWS: Row[] = [
  {
    name: "timed out, cancel not confirmed: cancel again, then cleanup",
    in: { agent: timedOut().build(), definition: batchDef().build() },
    rules: ["terminal-noop", "cancel-then-cleanup"],
    actions: [cancelAction, cleanupAfterCancel],
  },
  {
    name: "on a fallback Job, the batch's cancel not confirmed: cancel again, then cleanup",
    in: {
      agent: inFlight({ batchFallback: true, jobName: "agent-job-run-1" }).build(),
      definition: batchDef().build(),
    },
    rules: ["job-unobserved", "cancel-then-cleanup"],
    actions: [cancelAction, cleanupAfterCancel],
  },
  {
    name: "timed out, cancel failed (not deleted): not counted, retried later",
    in: {
      agent: timedOut().build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "cancel_failed", error: "HTTP 503" } },
    },
    rules: ["terminal-noop", "cleanup-not-settled"],
    actions: [],
  },
  {
    name: "timed out, cancel failed with Retry-After 60 s: no retry 20 s later",
    in: {
      agent: timedOut().build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW - 20_000, cleanupRetryAfterMs: 60_000 },
    },
    rules: ["terminal-noop", "finalizer-wait"],
    actions: [],
  },
  {
    name: "timed out, cancel confirmed: cleanup only",
    in: { agent: timedOut().build(), definition: batchDef().build(), batch: { cancelledAt: NOW - 60_000 } },
    rules: ["terminal-noop", "cleanup"],
    actions: [{ ...cleanupAfterCancel, dependsOn: undefined }].map(({ dependsOn: _d, ...a }) => a),
  },
  {
    name: "deleted, cancel failed (revoked key): counted as a failed cleanup",
    in: {
      agent: inFlight({ batchCleanupAttempts: 1 }).deleting().build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "cancel_failed", error: "HTTP 401" } },
    },
    rules: ["cleanup-failed"],
    actions: countedCleanupFailure(2),
  },
  {
    name: "deleted, fifth failed cancel: finalizer released anyway",
    in: {
      agent: inFlight({ batchCleanupAttempts: 4 }).deleting().build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "cancel_failed", error: "key removed" } },
    },
    rules: ["cleanup-failed"],
    actions: [
      ...countedCleanupFailure(5),
      {
        id: "remove-finalizer",
        type: "removeFinalizer",
        agent: REF,
        finalizer: FIN,
        index: 0,
        dependsOn: ["patch-cleanup-attempts"],
      },
    ],
  },
  {
    name: "deleted with the definition gone, submission recorded: still cancels with the recorded key",
    in: { agent: inFlight({ batchSubmission: RECORDED }).deleting().build(), definition: undefined },
    rules: ["cancel-then-cleanup"],
    actions: [cancelAction, cleanupAfterCancel],
  },
];

// ---- Job creation failures (docs/decisions.md D-101) and pruning that repairs itself (D-105).
const QUOTA =
  '403 Forbidden: jobs.batch "agent-job-run-1" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1';
const JOB_CREATE_ROWS: Row[] = [
  {
    name: "Job creation refused (quota Forbidden): Failed, the reason quotes the API server, counted job_rejected",
    in: { jobCreateFailure: { permanent: true, message: QUOTA, at: NOW - 1000, attempts: 1 } },
    rules: ["job-create-refused"],
    actions: failedAtPending(`Job creation refused: ${QUOTA}`, "job_rejected"),
  },
  {
    name: "Job creation failed with a 5xx: waits for the backoff and says why",
    in: {
      jobCreateFailure: {
        permanent: false,
        message: "503: etcd leader changed",
        at: NOW - 1000,
        attempts: 2,
      },
    },
    rules: ["job-create-backoff"],
    actions: [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: REF,
        reason: "JobCreateRetrying",
        message: `Job creation failed (attempt 2), retrying at ${iso(NOW + 3000)}: 503: etcd leader changed`,
        retryAt: NOW + 3000,
      },
    ],
  },
  {
    name: "Job creation throttled (429): Retry-After wins over the backoff",
    in: {
      jobCreateFailure: {
        permanent: false,
        message: "429: slow down",
        at: NOW - 1000,
        attempts: 1,
        retryAfterMs: 30_000,
      },
    },
    rules: ["job-create-backoff"],
    actions: [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: REF,
        reason: "JobCreateRetrying",
        message: `Job creation failed (attempt 1), retrying at ${iso(NOW + 29_000)}: 429: slow down`,
        retryAt: NOW + 29_000,
      },
    ],
  },
  {
    name: "after the backoff the Job creation is tried again",
    in: { jobCreateFailure: { permanent: false, message: "503", at: NOW - 2000, attempts: 1 } },
    rules: ["job-create"],
    actions: [
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      patch(
        { phase: "Running", jobName: "agent-job-run-1", startedAt: NOW_ISO },
        { dependsOn: ["create-job"] },
      ),
      {
        id: "metric-queue",
        type: "recordMetric",
        metric: { name: "controller_run_queue_seconds", value: 60 },
        dependsOn: ["create-job", "patch-status"],
      },
    ],
  },
];
const doneRun = (name: string, phase: "Succeeded" | "Failed", ms: number) =>
  agent(name).completed(phase, ms).build();
const PRUNE_ROWS: Row[] = [
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
    actions: [
      { id: "prune-run-1", type: "deleteAgent", agent: REF, resourceVersion: "100", reason: "prune" },
    ],
  },
  {
    name: "failedRunsHistoryLimit 0: a failed run in the history is deleted",
    in: {
      agent: agent().completed("Failed", T0).build(),
      station: station().spec({ failedRunsHistoryLimit: 0, maxConcurrentRuns: 1 }).build(),
    },
    rules: ["terminal-prune"],
    actions: [
      { id: "prune-run-1", type: "deleteAgent", agent: REF, resourceVersion: "100", reason: "prune" },
    ],
  },
  {
    name: "failedRunsHistoryLimit 0: the Job's failure patches Failed and prunes the Agent itself",
    in: {
      agent: agent().running(T0).build(),
      station: station().spec({ failedRunsHistoryLimit: 0, maxConcurrentRuns: 1 }).build(),
      job: {
        found: true,
        status: { conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] },
      },
      pod: { found: false },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        output: "",
        failureReason: "BackoffLimitExceeded",
      }),
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("job_failed"),
      { id: "prune-run-1", type: "deleteAgent", agent: REF, reason: "prune", dependsOn: ["patch-status"] },
    ],
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
];

const rows: Row[] = [
  // ---- Pending
  {
    name: "missing Station fails with the exact reason, counted as missing_ref, not timed, not pruned",
    in: { station: undefined, definition: undefined },
    rules: ["station-missing"],
    actions: failedAtPending("Station st not found", "missing_ref"),
  },
  {
    name: "missing AgentDefinition fails with the exact reason",
    in: { definition: undefined },
    rules: ["definition-missing"],
    actions: failedAtPending("AgentDefinition def not found", "missing_ref"),
  },
  {
    name: "admission failure fails with the check's message",
    in: {
      definition: definition().spec({ execution: "realtime" }).build(),
      settings: { ...input().settings, realtimeEnabled: false },
    },
    rules: ["invalid"],
    actions: failedAtPending("realtime execution is disabled on this controller", "invalid_spec"),
  },
  {
    name: "batch while BATCH_ENABLED=false fails at Pending",
    in: { definition: batchDef().build(), settings: { ...input().settings, batchEnabled: false } },
    rules: ["invalid"],
    actions: failedAtPending("batch execution is disabled on this controller", "invalid_spec"),
  },
  {
    name: "unbuildable Job fails with invalid Station template",
    in: {
      station: station()
        .spec({ template: { spec: { containers: [{ name: "main" }] } } })
        .build(),
    },
    rules: ["unbuildable"],
    actions: failedAtPending("invalid Station template: no container named agent", "invalid_spec"),
  },
  {
    name: "Job run admitted: create the Job, then patch Running, then the queue metric",
    in: {},
    rules: ["job-create"],
    actions: [
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      patch(
        { phase: "Running", jobName: "agent-job-run-1", startedAt: NOW_ISO },
        { dependsOn: ["create-job"] },
      ),
      {
        id: "metric-queue",
        type: "recordMetric",
        metric: { name: "controller_run_queue_seconds", value: 60 },
        dependsOn: ["create-job", "patch-status"],
      },
    ],
  },
  {
    name: "a realtime run resuming a session: the Running patch records that session id (docs/decisions.md D-44: it keeps the id)",
    in: {
      agent: agent().spec({ resumeSession: "7c0d3f5e-2a41-4b8e-9d6f-1e2a3b4c5d6e" }).build(),
      definition: definition()
        .spec({
          execution: "realtime",
          resources: { conversation: { source: "https://state.example/conv" } },
        })
        .build(),
    },
    rules: ["job-create"],
    actions: [
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      patch(
        {
          phase: "Running",
          jobName: "agent-job-run-1",
          startedAt: NOW_ISO,
          sessionId: "7c0d3f5e-2a41-4b8e-9d6f-1e2a3b4c5d6e",
        },
        { dependsOn: ["create-job"] },
      ),
      {
        id: "metric-queue",
        type: "recordMetric",
        metric: { name: "controller_run_queue_seconds", value: 60 },
        dependsOn: ["create-job", "patch-status"],
      },
    ],
  },
  ...JOB_CREATE_ROWS,
  ...PRUNE_ROWS,
  {
    name: "full Station (Allow) waits",
    in: {
      station: station().spec({ maxConcurrentRuns: 1 }).build(),
      stationAgents: [agent("other").running(T0).build()],
    },
    rules: ["wait-for-slot"],
    actions: [],
  },
  {
    name: "budget reached: held Pending, naming the budget, the spend and when the window frees room",
    in: {
      station: {
        ...station()
          .spec({ budget: { limitUSD: 1, window: "24h" } })
          .build(),
        status: {
          spend: [
            { agent: "uid-a", completedAt: iso(T0 - 3_600_000), costUSD: "0.6" },
            { agent: "uid-b", completedAt: iso(T0), costUSD: "0.5" },
            // Left the window: no longer counts.
            { agent: "uid-c", completedAt: iso(T0 - 90_000_000), costUSD: "9" },
          ],
        },
      },
    },
    rules: ["budget-exhausted"],
    actions: [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: REF,
        reason: "BudgetExhausted",
        message: `budget of Station st reached: $1.1 spent of $1 in the last 24h; the run starts when the window frees room at ${iso(T0 - 3_600_000 + 86_400_000)}`,
        retryAt: T0 - 3_600_000 + 86_400_000,
      },
    ],
  },
  {
    name: "budget of 0: held with no retry time (nothing ever frees room)",
    in: {
      station: station()
        .spec({ budget: { limitUSD: 0, window: "30d" } })
        .build(),
    },
    rules: ["budget-exhausted"],
    actions: [
      {
        id: "report-waiting",
        type: "reportWaiting",
        agent: REF,
        reason: "BudgetExhausted",
        message:
          "budget of Station st reached: $0 spent of $0 in the last 30d; a limit of 0 holds every new run until the budget is raised",
      },
    ],
  },
  {
    name: "budget not reached (spend below the limit within the window): the run starts",
    in: {
      station: {
        ...station()
          .spec({ budget: { limitUSD: 1, window: "90m" } })
          .build(),
        status: {
          spend: [
            { agent: "uid-a", completedAt: iso(T0), costUSD: "0.999999" },
            { agent: "uid-b", completedAt: iso(NOW - 90 * 60_000), costUSD: "5" },
          ],
        },
      },
    },
    rules: ["job-create"],
    actions: [
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      {
        ...patch({ phase: "Running", jobName: "agent-job-run-1", startedAt: NOW_ISO }),
        dependsOn: ["create-job"],
      },
      {
        id: "metric-queue",
        type: "recordMetric",
        metric: { name: "controller_run_queue_seconds", value: 60 },
        dependsOn: ["create-job", "patch-status"],
      },
    ],
  },
  {
    name: "Job complete on a budgeted Station: the spend entry first, usage and cost on the patch, cost metrics after it",
    in: {
      agent: agent().running(T0).build(),
      station: station()
        .spec({ budget: { limitUSD: 5, window: "24h" } })
        .build(),
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      pod: {
        found: true,
        containerStatuses: [],
        agentLog: {
          available: true,
          text: '{"type":"result","is_error":false,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":30,"cache_creation_input_tokens":40}}',
        },
      },
    },
    rules: ["job-finished"],
    actions: [
      {
        id: "record-spend",
        type: "recordSpend",
        station: { namespace: NS, name: "st" },
        entry: { agent: "uid-run-1", completedAt: NOW_ISO, costUSD: "0.25" },
        windowMs: 86_400_000,
      },
      patch({
        phase: "Succeeded",
        exitCode: 0,
        completedAt: NOW_ISO,
        output:
          '{"type":"result","is_error":false,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":30,"cache_creation_input_tokens":40}}',
        usage: {
          inputTokens: 10,
          outputTokens: 20,
          cacheReadTokens: 30,
          cacheWriteTokens: 40,
          totalTokens: 100,
        },
        costUSD: "0.25",
        costSource: "reported",
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
      ...(["input", "output", "cache_read", "cache_write"] as const).map((type, i) => ({
        id: `metric-tokens-${type}`,
        type: "recordMetric",
        metric: {
          name: "controller_run_tokens_total",
          // The definition names no model: the CLI's default.
          labels: { station: "st", model: "default", execution: "interactive", type },
          value: (i + 1) * 10,
        },
        dependsOn: ["patch-status"],
      })),
      {
        id: "metric-cost",
        type: "recordMetric",
        metric: {
          name: "controller_run_cost_usd_total",
          labels: { station: "st", model: "default", execution: "interactive" },
          value: 0.25,
        },
        dependsOn: ["patch-status"],
      },
    ],
  },
  {
    name: "cache lag: an issued but unseen creation keeps a Forbid Station full",
    in: {
      station: station().spec({ concurrencyPolicy: "Forbid" }).build(),
      stationAgents: [
        agent("other")
          .created(T0 - 1000)
          .build(),
      ],
      pendingCreations: ["other"],
    },
    rules: ["wait-for-slot"],
    actions: [],
  },
  {
    name: "Replace deletes the oldest Running run (precondition: its resourceVersion) before creating the Job",
    in: {
      station: station().spec({ concurrencyPolicy: "Replace" }).build(),
      stationAgents: [
        agent("old")
          .running(T0 - 5000)
          .rv("7")
          .build(),
      ],
    },
    rules: ["job-create"],
    actions: [
      {
        id: "preempt-old",
        type: "deleteAgent",
        agent: { namespace: NS, name: "old", uid: "uid-old" },
        resourceVersion: "7",
        reason: "preempt",
        for: REF,
      },
      {
        id: "metric-preempted-old",
        type: "recordMetric",
        metric: { name: "controller_run_failures_total", labels: { kind: "preempted" } },
        dependsOn: ["preempt-old"],
      },
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1", dependsOn: ["preempt-old"] },
      patch(
        { phase: "Running", jobName: "agent-job-run-1", startedAt: NOW_ISO },
        { dependsOn: ["create-job"] },
      ),
      {
        id: "metric-queue",
        type: "recordMetric",
        metric: { name: "controller_run_queue_seconds", value: 60 },
        dependsOn: ["create-job", "patch-status"],
      },
    ],
  },
  {
    name: "batch admitted: finalizer first, then submit with the default model and maxTokens",
    in: { definition: batchDef().spec({ model: undefined }).build() },
    rules: ["batch-submit"],
    actions: [
      { id: "add-finalizer", type: "addFinalizer", agent: REF, finalizer: FIN },
      {
        id: "submit-batch",
        type: "submitBatch",
        agent: REF,
        provider: "anthropic",
        apiKey: KEY,
        request: {
          agentUid: "uid-run-1",
          model: "claude-opus-5-5",
          prompt: "Fix {ticket}.",
          maxTokens: 16000,
        },
        dependsOn: ["add-finalizer"],
      },
    ],
  },
  {
    name: "batch submit uses the Agent's model, maxTokens, schema and the vendor's key entry",
    in: {
      agent: agent()
        .finalizers(FIN)
        .spec({ model: "gpt-5-mini", parameters: { ticket: "T-1" } })
        .build(),
      definition: batchDef()
        .spec({
          batch: { maxTokens: 500 },
          output: { schema: { type: "object" } },
          resources: { secrets: [{ name: "OPENAI_API_KEY", ref: "openai-key" }] },
        })
        .build(),
    },
    rules: ["batch-submit", "finalizer-wait"],
    actions: [
      {
        id: "submit-batch",
        type: "submitBatch",
        agent: REF,
        provider: "openai",
        apiKey: { secretName: "agent-secrets", secretKey: "openai-key" },
        request: {
          agentUid: "uid-run-1",
          model: "gpt-5-mini",
          prompt: "Fix T-1.",
          maxTokens: 500,
          outputSchema: { type: "object" },
        },
      },
    ],
  },
  {
    name: "batch submitted: patch Running with batchId, batchProvider, startedAt; then agent/started",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: batchDef().build(),
      batch: { submitted: { batchId: "msgbatch_1", at: T0 + 30_000 } },
    },
    rules: ["batch-submitted", "finalizer-wait"],
    actions: [
      patch({
        phase: "Running",
        batchId: "msgbatch_1",
        batchProvider: "anthropic",
        startedAt: iso(T0 + 30_000),
        batchSubmission: RECORDED,
      }),
      events("event-started", [lifecycle("started")]),
    ],
  },
  ...SUBMIT_FAILURE_ROWS,
  // ---- Running, Job runs
  {
    name: "Job not read yet: nothing",
    in: { agent: agent().running(T0).build() },
    rules: ["job-unobserved"],
    actions: [],
  },
  {
    name: "Job still running: nothing",
    in: { agent: agent().running(T0).build(), job: { found: true, status: {} } },
    rules: ["job-running"],
    actions: [],
  },
  {
    name: "Job running, its init waits past STUCK_POD_SECONDS on a missing key: Failed with the kubelet's reason, Job deleted (docs/decisions.md D-22)",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: {} },
      runningPod: {
        createdAt: NOW - 301_000,
        initContainerStatuses: [
          {
            name: "init",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: {
              waiting: {
                reason: "CreateContainerConfigError",
                message: "couldn't find key k in Secret ns/agent-secrets",
              },
            },
          },
        ],
      },
    },
    rules: ["pod-never-starts"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        output: "",
        failureReason: "CreateContainerConfigError: couldn't find key k in Secret ns/agent-secrets",
      }),
      {
        id: "delete-job",
        type: "deleteJob",
        agent: REF,
        job: "agent-job-run-1",
        dependsOn: ["patch-status"],
      },
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("job_failed"),
    ],
  },
  {
    name: "Job running, the same wait not yet past STUCK_POD_SECONDS: nothing",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: {} },
      runningPod: {
        createdAt: NOW - 299_000,
        initContainerStatuses: [
          {
            name: "init",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "CreateContainerConfigError", message: "m" } },
          },
        ],
      },
    },
    rules: ["job-running"],
    actions: [],
  },
  {
    name: "Job complete: Succeeded with exitCode 0, output, sessionId",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      pod: {
        found: true,
        containerStatuses: [],
        agentLog: { available: true, text: '{"type":"result","is_error":false,"session_id":"s-9"}' },
      },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Succeeded",
        exitCode: 0,
        completedAt: NOW_ISO,
        output: '{"type":"result","is_error":false,"session_id":"s-9"}',
        sessionId: "s-9",
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
    ],
  },
  {
    name: "Job failed, pod garbage-collected: Failed, Job reason kept, exitCode 1",
    in: {
      agent: agent().running(T0).build(),
      job: {
        found: true,
        status: {
          conditions: [{ type: "Failed", status: "True", reason: "DeadlineExceeded", message: "too long" }],
        },
      },
      pod: { found: false },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        output: "",
        failureReason: "DeadlineExceeded: too long",
      }),
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("job_failed"),
    ],
  },
  {
    name: "Job complete but pod garbage-collected: Succeeded with the read-back reason",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: { succeeded: 1 } },
      pod: { found: false },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Succeeded",
        exitCode: 0,
        completedAt: NOW_ISO,
        output: "",
        failureReason: "run output unavailable: pod garbage-collected",
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
      failure("output_unavailable"),
    ],
  },
  {
    name: "Job garbage-collected: Failed with the run-record reason; prunes per history limits",
    in: {
      agent: agent().running(T0).build(),
      job: { found: false },
      station: station().spec({ failedRunsHistoryLimit: 1 }).build(),
      stationAgents: [
        agent("f-old")
          .completed("Failed", T0 - DAY)
          .rv("5")
          .build(),
      ],
    },
    rules: ["job-gc"],
    actions: [
      patch({
        phase: "Failed",
        exitCode: 1,
        completedAt: NOW_ISO,
        output: "",
        failureReason: "run record unavailable: Job garbage-collected before its result was observed",
      }),
      completed("Failed", "1"),
      duration("Failed", 60),
      failure("output_unavailable"),
      {
        id: "prune-f-old",
        type: "deleteAgent",
        agent: { namespace: NS, name: "f-old", uid: "uid-f-old" },
        resourceVersion: "5",
        reason: "prune",
        dependsOn: ["patch-status"],
      },
    ],
  },
  {
    name: "terminal Agent: no actions at all",
    in: { agent: agent().completed("Succeeded", T0).build(), job: { found: false } },
    rules: ["terminal-noop"],
    actions: [],
  },
  {
    name: "deleted Agent without finalizer: no actions",
    in: { agent: agent().running(T0).deleting().build(), job: { found: false } },
    rules: [],
    actions: [],
  },
  // ---- Running, batch
  {
    name: "batch in flight, poll due",
    in: { agent: inFlight().build(), definition: batchDef().build(), batch: { lastPollAt: NOW - 60_000 } },
    rules: ["batch-poll", "finalizer-wait"],
    actions: [
      {
        id: "poll-batch",
        type: "pollBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
        ctx: { agentUid: "uid-run-1", model: "claude-sonnet-4-6" },
      },
    ],
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
    actions: [
      {
        id: "poll-batch",
        type: "pollBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
        ctx: { agentUid: "uid-run-1", model: "claude-sonnet-4-6" },
      },
    ],
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
    actions: [
      patch({ phase: "Succeeded", exitCode: 0, completedAt: NOW_ISO, output: OUTPUT }),
      events("event-terminal", [...cliItems, lifecycle("succeeded", { exitCode: 0 })]),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
    ],
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
    actions: [
      {
        id: "poll-batch",
        type: "pollBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
        ctx: { agentUid: "uid-run-1", model: "claude-sonnet-4-6" },
      },
    ],
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
    actions: [
      patch({ phase: "Succeeded", exitCode: 0, completedAt: NOW_ISO, output: OUTPUT }),
      events("event-terminal", [...cliItems, lifecycle("succeeded", { exitCode: 0 })]),
      completed("Succeeded", "0"),
      duration("Succeeded", 86400),
    ],
  },
  {
    name: "timeout with onTimeout fail (default 1440 min): cancel; Failed `batch timed out`; agent/failed batch_timeout",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" } },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [
      {
        id: "cancel-batch",
        type: "cancelBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
      patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: "batch timed out" }),
      events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })]),
      completed("Failed", "1"),
      duration("Failed", 86400),
      failure("batch_timeout"),
    ],
  },
  {
    name: "timeout reconciled again before its patch is visible: the cancel that succeeded is not sent twice",
    in: {
      agent: inFlight({ startedAt: iso(NOW - DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastPollAt: NOW, pollResult: { state: "in_progress" }, cancelledAt: NOW },
    },
    rules: ["batch-timeout-fail", "finalizer-wait"],
    actions: [
      patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, failureReason: "batch timed out" }),
      events("event-terminal", [lifecycle("failed", { exitCode: 1, reason: "batch_timeout" })]),
      completed("Failed", "1"),
      duration("Failed", 86400),
      failure("batch_timeout"),
    ],
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
      {
        id: "cancel-batch",
        type: "cancelBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      patch({ batchFallback: true, jobName: "agent-job-run-1" }, { dependsOn: ["create-job"] }),
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
      {
        id: "cancel-batch",
        type: "cancelBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
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
    actions: [
      { id: "create-job", type: "createJob", agent: REF, job: "agent-job-run-1" },
      patch({ jobName: "agent-job-run-1" }, { dependsOn: ["create-job"] }),
    ],
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
      {
        id: "remove-finalizer",
        type: "removeFinalizer",
        agent: REF,
        finalizer: FIN,
        index: 0,
        dependsOn: ["patch-status"],
      },
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
  ...OUTLIVES_DEFINITION_ROWS,
  // ---- finalizer / cleanup
  ...CANCEL_RETRY_ROWS,
  {
    name: "terminal batch with finalizer: cleanup",
    in: { agent: inFlight({ phase: "Succeeded" }).build(), definition: batchDef().build() },
    rules: ["terminal-noop", "cleanup"],
    actions: [
      {
        id: "cleanup-batch",
        type: "cleanupBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
    ],
  },
  {
    name: "cleanup done: remove the finalizer (JSON patch at its index)",
    in: {
      agent: inFlight({ phase: "Succeeded" }).finalizers("other/keep", FIN).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "done" } },
    },
    rules: ["terminal-noop", "cleanup-done"],
    actions: [{ id: "remove-finalizer", type: "removeFinalizer", agent: REF, finalizer: FIN, index: 1 }],
  },
  {
    name: "cleanup not settled within 48 h: keep the finalizer, no failure counted",
    in: {
      agent: inFlight({ phase: "Failed" }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "not_settled" } },
    },
    rules: ["terminal-noop", "cleanup-not-settled"],
    actions: [],
  },
  {
    name: "cleanup not settled after 48 h counts as a failure",
    in: {
      agent: inFlight({ phase: "Failed", startedAt: iso(NOW - 2 * DAY) }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "not_settled" } },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: [
      patch({ batchCleanupAttempts: 1 }, { id: "patch-cleanup-attempts" }),
      {
        id: "metric-cleanup-failure",
        type: "recordMetric",
        metric: { name: "controller_batch_cleanup_failures_total" },
      },
    ],
  },
  {
    name: "cleanup failed: count it (phase untouched)",
    in: {
      agent: inFlight({ phase: "Succeeded", batchCleanupAttempts: 2 }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "failed", error: "HTTP 500" } },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: [
      patch({ batchCleanupAttempts: 3 }, { id: "patch-cleanup-attempts" }),
      {
        id: "metric-cleanup-failure",
        type: "recordMetric",
        metric: { name: "controller_batch_cleanup_failures_total" },
      },
    ],
  },
  {
    name: "fifth failed cleanup: remove the finalizer anyway",
    in: {
      agent: inFlight({ phase: "Succeeded", batchCleanupAttempts: 4 }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "failed", error: "HTTP 500" } },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: [
      patch({ batchCleanupAttempts: 5 }, { id: "patch-cleanup-attempts" }),
      {
        id: "metric-cleanup-failure",
        type: "recordMetric",
        metric: { name: "controller_batch_cleanup_failures_total" },
      },
      {
        id: "remove-finalizer",
        type: "removeFinalizer",
        agent: REF,
        finalizer: FIN,
        index: 0,
        dependsOn: ["patch-cleanup-attempts"],
      },
    ],
  },
  {
    name: "cleanup retried too recently: nothing",
    in: {
      agent: inFlight({ phase: "Succeeded" }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW - 5000 },
    },
    rules: ["terminal-noop", "finalizer-wait"],
    actions: [],
  },
  {
    name: "deleted while in flight: cancel, then cleanup",
    in: { agent: inFlight().deleting().build(), definition: batchDef().build() },
    rules: ["cancel-then-cleanup"],
    actions: [
      {
        id: "cancel-batch",
        type: "cancelBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
      {
        id: "cleanup-batch",
        type: "cleanupBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
        dependsOn: ["cancel-batch"],
      },
    ],
  },
  {
    name: "deleted after the cancel went through: cleanup only",
    in: {
      agent: inFlight().deleting().build(),
      definition: batchDef().build(),
      batch: { cancelledAt: NOW - 20_000 },
    },
    rules: ["cleanup"],
    actions: [
      {
        id: "cleanup-batch",
        type: "cleanupBatch",
        agent: REF,
        provider: "anthropic",
        batchId: "msgbatch_1",
        apiKey: KEY,
      },
    ],
  },
  {
    name: "BATCH_ENABLED=false and a terminal batch Agent: release the finalizer, no provider call",
    in: {
      agent: inFlight({ phase: "Succeeded" }).build(),
      definition: batchDef().build(),
      settings: { ...input().settings, batchEnabled: false },
    },
    rules: ["terminal-noop", "release-batch-disabled"],
    actions: [{ id: "remove-finalizer", type: "removeFinalizer", agent: REF, finalizer: FIN, index: 0 }],
  },
  {
    name: "finalizer but no batch ever submitted, Agent deleted: release",
    in: { agent: agent().finalizers(FIN).deleting().build(), definition: batchDef().build() },
    rules: ["release-no-batch"],
    actions: [{ id: "remove-finalizer", type: "removeFinalizer", agent: REF, finalizer: FIN, index: 0 }],
  },
  {
    name: "definition gone while cleanup is due: release (no key to call the provider with)",
    in: { agent: inFlight({ phase: "Succeeded" }).build(), definition: undefined },
    rules: ["terminal-noop", "release-no-provider"],
    actions: [{ id: "remove-finalizer", type: "removeFinalizer", agent: REF, finalizer: FIN, index: 0 }],
  },
];

describe("reconcile: one row per rule", () => {
  it.each(rows)("$name", (row) => {
    const d = decide(input({ now: NOW, ...row.in }));
    expect(d.rules).toEqual(row.rules);
    expect(summarize(d.actions)).toEqual(row.actions);
  });

  it("every phase and finalizer rule is exercised by a row", async () => {
    const { PHASE_RULES, FINALIZER_RULES } = await import("./state-machine.js");
    const covered = new Set(rows.flatMap((r) => r.rules));
    const missing = [...PHASE_RULES, ...FINALIZER_RULES].map((r) => r.id).filter((id) => !covered.has(id));
    expect(missing).toEqual([]);
  });

  it("action ids are unique within one result", () => {
    for (const row of rows) {
      const ids = reconcile(input({ now: NOW, ...row.in })).map((a) => a.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });
});
