/**
 * The Running, a Job rules (running-job.ts), one row per case. A Running Job run: read-back of the Job
 * and its pod, a pod that never starts (docs/decisions.md D-22), a garbage-collected Job, pruning
 * after the terminal patch.
 */

import { agent, NS, station, T0 } from "../../../test/support/core-builders.js";
import {
  completed,
  DAY,
  describeRules,
  duration,
  failure,
  NOW,
  NOW_ISO,
  patch,
  REF,
  type Row,
} from "../../../test/support/state-machine-rows.js";
import { formatUsd } from "../pricing/estimate.js";
import { boundedUsage, runBoundUsd } from "../pricing/run-bound.js";
import * as runningJob from "./running-job.js";
import { MSG_USAGE_UNREAD } from "./running-job.js";

/**
 * A CLI run of 60 s that succeeded without any usage in its log: charged the bound, flagged
 * (src/core/pricing/run-bound.ts): its patch fields and its cost metric.
 */
const BOUND_USD = runBoundUsd("claude", 60);
const unreadBound = {
  usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, totalTokens: 0 },
  costSource: "bounded",
  costUSD: formatUsd(BOUND_USD),
  costNote: boundedUsage({
    vendor: "claude",
    seconds: 60,
    usage: undefined,
    incomplete: { reason: "result-unread", why: MSG_USAGE_UNREAD },
  })?.note,
};
const boundCostMetric = {
  id: "metric-cost",
  type: "recordMetric" as const,
  metric: {
    name: "controller_run_cost_usd_total",
    labels: { station: "st", model: "default", execution: "interactive" },
    value: BOUND_USD,
  },
  dependsOn: ["patch-status"],
};

/** A Job run that ended Failed: its patch (no output read) and, apart, the metrics that follow it. */
const failedPatch = (failureReason: string) =>
  patch({ phase: "Failed", exitCode: 1, completedAt: NOW_ISO, output: "", failureReason });
const failedMetrics = (kind: string) => [completed("Failed", "1"), duration("Failed", 60), failure(kind)];

/** A run that waited twice for its provider (src/core/provider-limits/retry-event.ts), then succeeded. */
const RETRIED_LOG = [
  '{"kind":"provider-limit","provider":"anthropic","status":429,"retry":1,"waitSeconds":2,"retryAfterSeconds":2,"at":"2026-11-30T12:00:10.000Z","reason":"rate_limited","message":"slow down"}',
  '{"kind":"provider-limit","provider":"anthropic","status":529,"retry":2,"waitSeconds":10,"at":"2026-11-30T12:00:30.000Z","reason":"overloaded","message":"Overloaded"}',
  '{"type":"result","is_error":false,"session_id":"s-9"}',
].join("\n");

const ROWS: Row[] = [
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
      failedPatch("BackoffLimitExceeded"),
      ...failedMetrics("job_failed"),
      { id: "prune-run-1", type: "deleteAgent", agent: REF, reason: "prune", dependsOn: ["patch-status"] },
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
      failedPatch("CreateContainerConfigError: couldn't find key k in Secret ns/agent-secrets"),
      {
        id: "delete-job",
        type: "deleteJob",
        agent: REF,
        job: "agent-job-run-1",
        dependsOn: ["patch-status"],
      },
      ...failedMetrics("job_failed"),
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
        // A result without usage: charged the bound, and the status says so (never a silent $0).
        ...unreadBound,
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
      boundCostMetric,
    ],
  },
  {
    name: "Job complete after provider waits: status.providerRetries sums the supervisor's provider-limit events",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      pod: {
        found: true,
        containerStatuses: [],
        agentLog: { available: true, text: RETRIED_LOG },
      },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Succeeded",
        exitCode: 0,
        completedAt: NOW_ISO,
        output: RETRIED_LOG,
        sessionId: "s-9",
        ...unreadBound,
        providerRetries: {
          count: 2,
          waitedSeconds: 12,
          last: { provider: "anthropic", status: 529, at: "2026-11-30T12:00:30.000Z" },
        },
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
      boundCostMetric,
    ],
  },
  {
    name: "Job complete: usage from the facts the controller metered over the whole log, though the output's bounds cut the result line out",
    in: {
      agent: agent().running(T0).build(),
      job: { found: true, status: { conditions: [{ type: "Complete", status: "True" }] } },
      pod: {
        found: true,
        containerStatuses: [],
        agentLog: {
          available: true,
          text: "the tail of it",
          droppedBytes: 23,
          facts: {
            sessionId: "",
            cliError: "",
            usage: {
              usage: { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
              costUsd: 0.5,
              costSource: "reported",
            },
            pullRequestUrl: "",
            totalBytes: 37,
            unreadLines: 0,
            started: true,
            ended: true,
          },
        },
      },
    },
    rules: ["job-finished"],
    actions: [
      patch({
        phase: "Succeeded",
        exitCode: 0,
        completedAt: NOW_ISO,
        output: "...[truncated 23 bytes]...\nthe tail of it",
        usage: {
          inputTokens: 1000,
          outputTokens: 100,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          totalTokens: 1100,
        },
        costSource: "reported",
        costUSD: "0.5",
      }),
      completed("Succeeded", "0"),
      duration("Succeeded", 60),
      ...(
        [
          ["input", 1000],
          ["output", 100],
        ] as const
      ).map(([type, value]) => ({
        id: `metric-tokens-${type}`,
        type: "recordMetric" as const,
        metric: {
          name: "controller_run_tokens_total",
          labels: { station: "st", model: "default", execution: "interactive", type },
          value,
        },
        dependsOn: ["patch-status"],
      })),
      {
        id: "metric-cost",
        type: "recordMetric",
        metric: {
          name: "controller_run_cost_usd_total",
          labels: { station: "st", model: "default", execution: "interactive" },
          value: 0.5,
        },
        dependsOn: ["patch-status"],
      },
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
    actions: [failedPatch("DeadlineExceeded: too long"), ...failedMetrics("job_failed")],
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
      failedPatch("run record unavailable: Job garbage-collected before its result was observed"),
      ...failedMetrics("output_unavailable"),
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
];

describeRules("Running, a Job rules", ROWS, runningJob);
