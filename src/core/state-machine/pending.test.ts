/**
 * The Pending rules (pending.ts), one row per case. A Pending Agent: missing references and spec
 * checks, batch submits (recorded, refused, backed off, docs/decisions.md D-101), unbuildable Jobs,
 * budgets, admission and Replace, Job creation and its failures.
 */

import { describe, expect, it } from "vitest";
import { agent, definition, input, iso, NS, station, T0 } from "../../../test/support/core-builders.js";
import { PROVIDER_HOLD_ROWS } from "../../../test/support/provider-hold-rows.js";
import {
  batchDef,
  createJobAction,
  describeRules,
  events,
  FIN,
  failedAtPending,
  JOB,
  KEY,
  lifecycle,
  NOW,
  NOW_ISO,
  OPENAI_KEY,
  patch,
  RECORDED,
  REF,
  type Row,
} from "../../../test/support/state-machine-rows.js";
import * as pending from "./pending.js";
import { reconcile } from "./reconcile.js";

const SUBMIT_401 = "anthropic POST /v1/messages/batches: HTTP 401: authentication_error: invalid x-api-key";
const SUBMIT_529 = "anthropic POST /v1/messages/batches: HTTP 529: overloaded_error: Overloaded";
const waitingFor = (reason: string, message: string, retryAt?: number) => ({
  id: "report-waiting",
  type: "reportWaiting",
  agent: REF,
  reason,
  message,
  ...(retryAt === undefined ? {} : { retryAt }),
});
const waiting = (attempt: number, retryAt: number, message: string) =>
  waitingFor(
    "BatchSubmitRetrying",
    `batch submit failed (attempt ${attempt}), retrying at ${iso(retryAt).replace(".000Z", "Z")}: ${message}`,
    retryAt,
  );
const jobCreateWaiting = (attempt: number, retryAt: number, message: string) =>
  waitingFor(
    "JobCreateRetrying",
    `Job creation failed (attempt ${attempt}), retrying at ${iso(retryAt)}: ${message}`,
    retryAt,
  );
/** The Job run starts: the Job, then the Running patch (plus `status`), then the queue metric. */
const jobStarted = (status: Record<string, unknown> = {}, createJob: Record<string, unknown> = {}) => [
  createJobAction(createJob),
  patch({ phase: "Running", jobName: JOB, startedAt: NOW_ISO, ...status }, { dependsOn: ["create-job"] }),
  {
    id: "metric-queue",
    type: "recordMetric",
    metric: { name: "controller_run_queue_seconds", value: 60 },
    dependsOn: ["create-job", "patch-status"],
  },
];
/** The submit of the OpenAI run the rows below describe, `request` adding to its defaults. */
const openAISubmit = (request: Record<string, unknown>) => ({
  id: "submit-batch",
  type: "submitBatch",
  agent: REF,
  provider: "openai",
  apiKey: OPENAI_KEY,
  request: { agentUid: "uid-run-1", model: "gpt-5-mini", prompt: "Fix T-1.", maxTokens: 16000, ...request },
});
const GATEWAY_ON = {
  ...input().settings,
  gateway: { url: "http://agent-gateway:8080", credentialKey: Buffer.from("g".repeat(32)) },
};
/** A codex run whose definition names only the Anthropic key, with the gateway on. */
const NO_OPENAI_KEY = {
  settings: GATEWAY_ON,
  agent: agent().spec({ model: "gpt-5-codex" }).build(),
  definition: definition()
    .spec({ resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] } })
    .build(),
};
const NO_OPENAI_KEY_REASON = `model gateway: AgentDefinition ${NS}/def has no resources.secrets entry named OPENAI_API_KEY or CODEX_API_KEY (the key for model "gpt-5-codex", vendor openai); the gateway would refuse every call of the run (docs/gateway.md#provider-keys)`;
const QUOTA =
  '403 Forbidden: jobs.batch "agent-job-run-1" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1';

const ROWS: Row[] = [
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
    name: "with the model gateway on, a Station sidecar holding a provider key fails the Agent naming the container and variable (docs/gateway.md#run-credentials)",
    in: {
      settings: {
        ...input().settings,
        gateway: { url: "http://agent-gateway:8080", credentialKey: Buffer.from("g".repeat(32)) },
      },
      definition: definition()
        .spec({ resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] } })
        .build(),
      station: station()
        .spec({
          template: {
            spec: {
              containers: [
                { name: "agent", image: "node:22" },
                {
                  name: "proxy",
                  image: "proxy",
                  env: [
                    {
                      name: "ANTHROPIC_API_KEY",
                      valueFrom: { secretKeyRef: { name: "agent-secrets", key: "k" } },
                    },
                  ],
                },
              ],
            },
          },
        })
        .build(),
    },
    rules: ["unbuildable"],
    actions: failedAtPending(
      'provider key in the run pod: container "proxy" variable ANTHROPIC_API_KEY (Secret agent-secrets, key k); with the model gateway on, no run pod may hold a provider key (the gateway adds it; docs/gateway.md#run-credentials)',
      "invalid_spec",
    ),
  },
  {
    name: "with the model gateway on, a definition naming no key for its model's vendor fails the Agent naming the definition, variable, model and vendor (docs/gateway.md#provider-keys)",
    in: NO_OPENAI_KEY,
    rules: ["unbuildable"],
    actions: failedAtPending(NO_OPENAI_KEY_REASON, "invalid_spec"),
  },
  {
    name: "with the model gateway off, the same definition starts its Job, as the seeds describe",
    in: {
      agent: agent().spec({ model: "gpt-5-codex" }).build(),
      definition: definition()
        .spec({ resources: { secrets: [{ name: "ANTHROPIC_API_KEY", ref: "anthropic-key" }] } })
        .build(),
    },
    rules: ["job-create"],
    actions: jobStarted(),
  },
  {
    name: "Job run admitted: create the Job, then patch Running, then the queue metric",
    in: {},
    rules: ["job-create"],
    actions: jobStarted(),
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
    actions: jobStarted({ sessionId: "7c0d3f5e-2a41-4b8e-9d6f-1e2a3b4c5d6e" }),
  },
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
    actions: [jobCreateWaiting(2, NOW + 3000, "503: etcd leader changed")],
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
    actions: [jobCreateWaiting(1, NOW + 29_000, "429: slow down")],
  },
  {
    name: "after the backoff the Job creation is tried again",
    in: { jobCreateFailure: { permanent: false, message: "503", at: NOW - 2000, attempts: 1 } },
    rules: ["job-create"],
    actions: jobStarted(),
  },
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
      waitingFor(
        "BudgetExhausted",
        `budget of Station st reached: $1.1 spent of $1 in the last 24h; the run starts when the window frees room at ${iso(T0 - 3_600_000 + 86_400_000)}`,
        T0 - 3_600_000 + 86_400_000,
      ),
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
      waitingFor(
        "BudgetExhausted",
        "budget of Station st reached: $0 spent of $0 in the last 30d; a limit of 0 holds every new run until the budget is raised",
      ),
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
    actions: jobStarted(),
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
      ...jobStarted({}, { dependsOn: ["preempt-old"] }),
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
    actions: [openAISubmit({ maxTokens: 500, outputSchema: { type: "object" } })],
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
    actions: [openAISubmit({ inputFileId: "file-1" })],
  },
  ...PROVIDER_HOLD_ROWS,
];

describeRules("Pending rules", ROWS, pending);

describe("a Job builder refusal reaches the conditions and a Kubernetes Event (docs/gateway.md#issued-by-the-job-builder)", () => {
  it("a definition naming no key for its model's vendor: Ready False and Failed True with the reason, a Warning Event Failed noting it", () => {
    const actions = reconcile(input({ now: NOW, ...NO_OPENAI_KEY }));
    const status = actions.find((a) => a.type === "patchStatus")?.status as {
      conditions?: { type: string; status: string; reason: string; message: string }[];
    };
    expect(status.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "Ready",
          status: "False",
          reason: "Failed",
          message: NO_OPENAI_KEY_REASON,
        }),
        expect.objectContaining({
          type: "Failed",
          status: "True",
          reason: "InvalidSpec",
          message: NO_OPENAI_KEY_REASON,
        }),
      ]),
    );
    expect(actions.filter((a) => a.type === "recordEvent").map((a) => a.event)).toContainEqual(
      expect.objectContaining({ type: "Warning", reason: "Failed", note: NO_OPENAI_KEY_REASON }),
    );
  });
});
