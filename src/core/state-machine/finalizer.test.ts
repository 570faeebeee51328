/**
 * The finalizer rules (finalizer.ts), one row per case. The batch-cleanup finalizer: cancels retried
 * until confirmed and counted on delete (docs/decisions.md D-102, D-103), cleanup outcomes, releases
 * without a provider call.
 */
import { agent, input, iso, T0 } from "../../../test/support/core-builders.js";
import {
  batchDef,
  cancelAction,
  cleanupAction,
  DAY,
  describeRules,
  FIN,
  inFlight,
  NOW,
  OPENAI_KEY,
  patch,
  RECORDED,
  REF,
  type Row,
  removeFinalizerAction,
} from "../../../test/support/state-machine-rows.js";
import * as finalizer from "./finalizer.js";

const cancelThenCleanup = [cancelAction, { ...cleanupAction, dependsOn: ["cancel-batch"] }];
const countedCleanupFailure = (attempts: number) => [
  patch({ batchCleanupAttempts: attempts }, { id: "patch-cleanup-attempts" }),
  {
    id: "metric-cleanup-failure",
    type: "recordMetric",
    metric: { name: "controller_batch_cleanup_failures_total" },
  },
];
/** The fifth failed cleanup releases the finalizer all the same. */
const releasedAfterFailures = [
  ...countedCleanupFailure(5),
  removeFinalizerAction({ dependsOn: ["patch-cleanup-attempts"] }),
];
const timedOut = () => inFlight({ phase: "Failed", failureReason: "batch timed out" });

const ROWS: Row[] = [
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
        apiKey: OPENAI_KEY,
      },
      removeFinalizerAction(),
    ],
  },
  {
    name: "deleted Agent without finalizer: no actions",
    in: { agent: agent().running(T0).deleting().build(), job: { found: false } },
    rules: [],
    actions: [],
  },
  {
    name: "timed out, cancel not confirmed: cancel again, then cleanup",
    in: { agent: timedOut().build(), definition: batchDef().build() },
    rules: ["terminal-noop", "cancel-then-cleanup"],
    actions: cancelThenCleanup,
  },
  {
    name: "on a fallback Job, the batch's cancel not confirmed: cancel again, then cleanup",
    in: {
      agent: inFlight({ batchFallback: true, jobName: "agent-job-run-1" }).build(),
      definition: batchDef().build(),
    },
    rules: ["job-unobserved", "cancel-then-cleanup"],
    actions: cancelThenCleanup,
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
    actions: [cleanupAction],
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
    actions: releasedAfterFailures,
  },
  {
    name: "deleted with the definition gone, submission recorded: still cancels with the recorded key",
    in: { agent: inFlight({ batchSubmission: RECORDED }).deleting().build(), definition: undefined },
    rules: ["cancel-then-cleanup"],
    actions: cancelThenCleanup,
  },
  {
    name: "terminal batch with finalizer: cleanup",
    in: { agent: inFlight({ phase: "Succeeded" }).build(), definition: batchDef().build() },
    rules: ["terminal-noop", "cleanup"],
    actions: [cleanupAction],
  },
  {
    name: "cleanup done: remove the finalizer (JSON patch at its index)",
    in: {
      agent: inFlight({ phase: "Succeeded" }).finalizers("other/keep", FIN).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "done" } },
    },
    rules: ["terminal-noop", "cleanup-done"],
    actions: [removeFinalizerAction({ index: 1 })],
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
    actions: countedCleanupFailure(1),
  },
  {
    name: "cleanup failed: count it (phase untouched)",
    in: {
      agent: inFlight({ phase: "Succeeded", batchCleanupAttempts: 2 }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "failed", error: "HTTP 500" } },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: countedCleanupFailure(3),
  },
  {
    name: "fifth failed cleanup: remove the finalizer anyway",
    in: {
      agent: inFlight({ phase: "Succeeded", batchCleanupAttempts: 4 }).build(),
      definition: batchDef().build(),
      batch: { lastCleanupAt: NOW, cleanupResult: { state: "failed", error: "HTTP 500" } },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: releasedAfterFailures,
  },
  {
    name: "deleted, cancel confirmed, the cleanup's read of the settling batch failed: not counted, retried",
    in: {
      agent: inFlight({ batchCleanupAttempts: 2 }).deleting().build(),
      definition: batchDef().build(),
      batch: {
        cancelledAt: NOW - 30_000,
        settling: true,
        lastCleanupAt: NOW,
        cleanupResult: { state: "failed", error: "HTTP 500", settleUnseen: true },
      },
    },
    rules: ["cleanup-not-settled"],
    actions: [],
  },
  {
    name: "settling batch, cleanup failed after seeing it settled (a file delete): counted",
    in: {
      agent: inFlight({ batchCleanupAttempts: 2 }).deleting().build(),
      definition: batchDef().build(),
      batch: {
        cancelledAt: NOW - 30_000,
        settling: true,
        lastCleanupAt: NOW,
        cleanupResult: { state: "failed", error: "HTTP 500" },
      },
    },
    rules: ["cleanup-failed"],
    actions: countedCleanupFailure(3),
  },
  {
    name: "the read failed but the batch was not known to be settling (it had ended): counted",
    in: {
      agent: inFlight({ phase: "Succeeded", batchCleanupAttempts: 2 }).build(),
      definition: batchDef().build(),
      batch: {
        lastCleanupAt: NOW,
        cleanupResult: { state: "failed", error: "HTTP 500", settleUnseen: true },
      },
    },
    rules: ["terminal-noop", "cleanup-failed"],
    actions: countedCleanupFailure(3),
  },
  {
    name: "settling 48 h after startedAt: a failed read counts (stuck)",
    in: {
      agent: inFlight({ startedAt: iso(NOW - 2 * DAY), batchCleanupAttempts: 2 })
        .deleting()
        .build(),
      definition: batchDef().build(),
      batch: {
        cancelledAt: NOW - 30_000,
        settling: true,
        lastCleanupAt: NOW,
        cleanupResult: { state: "failed", error: "HTTP 500", settleUnseen: true },
      },
    },
    rules: ["cleanup-failed"],
    actions: countedCleanupFailure(3),
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
    actions: cancelThenCleanup,
  },
  {
    name: "deleted after the cancel went through: cleanup only",
    in: {
      agent: inFlight().deleting().build(),
      definition: batchDef().build(),
      batch: { cancelledAt: NOW - 20_000 },
    },
    rules: ["cleanup"],
    actions: [cleanupAction],
  },
  {
    name: "BATCH_ENABLED=false and a terminal batch Agent: release the finalizer, no provider call",
    in: {
      agent: inFlight({ phase: "Succeeded" }).build(),
      definition: batchDef().build(),
      settings: { ...input().settings, batchEnabled: false },
    },
    rules: ["terminal-noop", "release-batch-disabled"],
    actions: [removeFinalizerAction()],
  },
  {
    name: "finalizer but no batch ever submitted, Agent deleted: release",
    in: { agent: agent().finalizers(FIN).deleting().build(), definition: batchDef().build() },
    rules: ["release-no-batch"],
    actions: [removeFinalizerAction()],
  },
  {
    name: "definition gone while cleanup is due: release (no key to call the provider with)",
    in: { agent: inFlight({ phase: "Succeeded" }).build(), definition: undefined },
    rules: ["terminal-noop", "release-no-provider"],
    actions: [removeFinalizerAction()],
  },
];

describeRules("finalizer rules", ROWS, finalizer);
