/**
 * The Pending rows of the provider limits (docs/provider-limits.md), run with the other Pending
 * rows in src/core/state-machine/pending.test.ts: a run held by its Station's spec.providerLimits
 * or by what the controller learned of its endpoint, in its turn, with its concurrency policy.
 */
import type { ProviderInput } from "../../src/core/provider-limits/admission.js";
import { agent, definition, iso, station, T0 } from "./core-builders.js";
import { createJobAction, FIN, JOB, NOW, NOW_ISO, patch, REF, type Row } from "./state-machine-rows.js";

export const ENDPOINT = {
  id: "anthropic https://api.anthropic.com secret agent-secrets/anthropic-key",
  provider: "anthropic" as const,
  endpoint: "https://api.anthropic.com",
  key: "secret agent-secrets/anthropic-key",
};
const AT = "anthropic at https://api.anthropic.com (key secret agent-secrets/anthropic-key)";

const provider = (p: Partial<ProviderInput> = {}): ProviderInput => ({
  endpoint: ENDPOINT,
  running: 0,
  waiting: [],
  ...p,
});
const held = (reason: "ProviderThrottled" | "ProviderLimitReached", message: string, retryAt?: number) => ({
  id: "report-waiting",
  type: "reportWaiting",
  agent: REF,
  reason,
  message,
  ...(retryAt === undefined ? {} : { retryAt }),
  eventType: reason === "ProviderThrottled" ? "Warning" : "Normal",
});
const started = [
  createJobAction(),
  patch({ phase: "Running", jobName: JOB, startedAt: NOW_ISO }, { dependsOn: ["create-job"] }),
  {
    id: "metric-queue",
    type: "recordMetric",
    metric: { name: "controller_run_queue_seconds", value: 60 },
    dependsOn: ["create-job", "patch-status"],
  },
];
const limits = (l: Record<string, number>, extra: Record<string, unknown> = {}) =>
  station()
    .spec({ providerLimits: l, ...extra })
    .build();
const throttle = {
  provider: "anthropic",
  status: 429,
  at: NOW - 10_000,
  retryAfterSeconds: 40,
  agent: "earlier",
  runStartedAt: T0 - 60_000,
  source: "run" as const,
};
/** An older Agent of the same Station, waiting against the same endpoint. */
const older = (name = "older") =>
  agent(name)
    .created(T0 - 1000)
    .build();

export const PROVIDER_HOLD_ROWS: Row[] = [
  {
    name: "providerLimits.concurrentRuns reached (runs of every Station against the endpoint count): held, the next run starts when one ends",
    in: { station: limits({ concurrentRuns: 2 }), provider: provider({ running: 2 }) },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 2 concurrent runs against ${AT} (providerLimits.concurrentRuns) and they are all taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "providerLimits.concurrentRuns with room: the run starts",
    in: { station: limits({ concurrentRuns: 2 }), provider: provider({ running: 1 }) },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "the last free run against the endpoint goes to the older Agent of the Station waiting for it (order kept)",
    in: {
      station: limits({ concurrentRuns: 2 }),
      stationAgents: [older()],
      provider: provider({ running: 1, waiting: ["older", "run-1"] }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 2 concurrent runs against ${AT} (providerLimits.concurrentRuns) and they are all taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "an older Agent of the Station against another endpoint does not go first",
    in: {
      station: limits({ concurrentRuns: 2 }),
      stationAgents: [older()],
      provider: provider({ running: 1, waiting: ["run-1"] }),
    },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "an older Agent already being started is counted once, as running",
    in: {
      station: limits({ concurrentRuns: 2 }),
      stationAgents: [older()],
      pendingCreations: ["older"],
      provider: provider({ running: 1, waiting: ["older", "run-1"] }),
    },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "concurrentRuns 1 says 'it is taken'",
    in: { station: limits({ concurrentRuns: 1 }), provider: provider({ running: 1 }) },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 1 concurrent run against ${AT} (providerLimits.concurrentRuns) and it is taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "the provider's retry-after in force (learned): held until then, whatever the Station declares, a Warning",
    in: {
      provider: provider({ record: { holdUntil: NOW + 30_000, lastThrottle: throttle, window: 4 } }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderThrottled",
        `${AT} answered 429 with retry-after 40 s at ${iso(NOW - 10_000)} to the run of Agent earlier; no run starts against it before ${iso(NOW + 30_000)}: the next run starts then`,
        NOW + 30_000,
      ),
    ],
  },
  {
    name: "a dropped connection seen on a batch submit reads as such",
    in: {
      provider: provider({
        record: {
          holdUntil: NOW + 15_000,
          lastThrottle: { ...throttle, status: 0, retryAfterSeconds: undefined, source: "batch" },
        },
      }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderThrottled",
        `${AT} dropped the connection at ${iso(NOW - 10_000)} to a batch submit of Agent earlier; no run starts against it before ${iso(NOW + 15_000)}: the next run starts then`,
        NOW + 15_000,
      ),
    ],
  },
  {
    name: "the learned window is full (3 of 3.6 runs going): held until a run against the endpoint ends",
    in: { provider: provider({ running: 3, record: { window: 3.6, lastThrottle: throttle } }) },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderThrottled",
        `${AT} answered 429 with retry-after 40 s at ${iso(NOW - 10_000)} to the run of Agent earlier; the controller now starts at most 3 concurrent runs against it and they are all taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "the learned window has room: the run starts",
    in: { provider: provider({ running: 2, record: { window: 3, lastThrottle: throttle } }) },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "requestsPerMinute 60: one start a second; the last start 0.4 s ago holds this one until its turn",
    in: {
      station: limits({ requestsPerMinute: 60 }),
      provider: provider({ running: 5, record: { lastStartAt: NOW - 400 } }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 60 requests per minute against ${AT} (providerLimits.requestsPerMinute), and a run makes at least one: one run start every 1 s; the next run starts at ${iso(NOW + 1000)}`,
        NOW + 600,
      ),
    ],
  },
  {
    name: "requestsPerMinute 60, the last start a second ago: the run starts",
    in: {
      station: limits({ requestsPerMinute: 60 }),
      provider: provider({ running: 5, record: { lastStartAt: NOW - 1000 } }),
    },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "requestsPerMinute: an Agent behind two older ones of its Station waits for its own turn",
    in: {
      station: limits({ requestsPerMinute: 6 }),
      stationAgents: [older("a"), older("b")],
      provider: provider({ record: { lastStartAt: NOW - 60_000 }, waiting: ["a", "b", "run-1"] }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 6 requests per minute against ${AT} (providerLimits.requestsPerMinute), and a run makes at least one: one run start every 10 s; the older Agents waiting in Station st's queue start first`,
        NOW + 20_000,
      ),
    ],
  },
  {
    name: "tokensPerMinute before any run told its tokens: one run at a time",
    in: { station: limits({ tokensPerMinute: 10_000 }), provider: provider({ running: 1 }) },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 10000 tokens per minute against ${AT} (providerLimits.tokensPerMinute); until a run against it has ended and told its tokens, runs start one at a time: the next run starts when the one going ends`,
      ),
    ],
  },
  {
    name: "tokensPerMinute before any run told its tokens, none going: the first run starts",
    in: { station: limits({ tokensPerMinute: 10_000 }), provider: provider() },
    rules: ["job-create"],
    actions: started,
  },
  {
    name: "tokensPerMinute 10000 at 2500 tokens a run: one start every 15 s, the binding figure beside requestsPerMinute",
    in: {
      station: limits({ tokensPerMinute: 10_000, requestsPerMinute: 1000 }),
      provider: provider({ running: 3, record: { tokensPerRun: 2500, lastStartAt: NOW - 10_000 } }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 10000 tokens per minute against ${AT} (providerLimits.tokensPerMinute); at about 2500 tokens per run that is one run start every 15 s; the next run starts at ${iso(NOW + 5000)}`,
        NOW + 5000,
      ),
    ],
  },
  {
    name: "a full Station waits for its slot first (its own queue and Queued condition); the provider is asked only for a run the Station would start",
    in: {
      station: limits({ concurrentRuns: 1 }, { maxConcurrentRuns: 1 }),
      stationAgents: [agent("other").running(T0).build()],
      provider: provider({ running: 1 }),
    },
    rules: ["wait-for-slot"],
    actions: [],
  },
  {
    name: "Replace: a provider hold preempts nothing (the run could not start anyway)",
    in: {
      station: limits({ concurrentRuns: 1 }, { concurrencyPolicy: "Replace" }),
      stationAgents: [agent("old").running(T0).build()],
      provider: provider({ running: 1 }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 1 concurrent run against ${AT} (providerLimits.concurrentRuns) and it is taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "an Agent held for a day is still only held: waiting never fails it",
    in: {
      agent: agent()
        .created(NOW - 86_400_000)
        .build(),
      station: limits({ concurrentRuns: 1 }),
      provider: provider({ running: 1 }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        `Station st allows 1 concurrent run against ${AT} (providerLimits.concurrentRuns) and it is taken; the next run starts when one of them ends`,
      ),
    ],
  },
  {
    name: "a batch run is held before its submit (and gets no finalizer yet)",
    in: {
      definition: definition().batch().build(),
      station: limits({ concurrentRuns: 1 }),
      provider: provider({
        running: 1,
        endpoint: {
          ...ENDPOINT,
          id: "anthropic batch API secret agent-secrets/anthropic-key",
          endpoint: "batch API",
        },
      }),
    },
    rules: ["provider-hold"],
    actions: [
      held(
        "ProviderLimitReached",
        "Station st allows 1 concurrent run against anthropic at the batch API (key secret agent-secrets/anthropic-key) (providerLimits.concurrentRuns) and it is taken; the next run starts when one of them ends",
      ),
    ],
  },
  {
    name: "a held batch run that has its finalizer keeps it while waiting",
    in: {
      agent: agent().finalizers(FIN).build(),
      definition: definition().batch().build(),
      provider: provider({
        record: { holdUntil: NOW + 1000, lastThrottle: { ...throttle, source: "batch" } },
      }),
    },
    rules: ["provider-hold", "finalizer-wait"],
    actions: [
      held(
        "ProviderThrottled",
        `${AT} answered 429 with retry-after 40 s at ${iso(NOW - 10_000)} to a batch submit of Agent earlier; no run starts against it before ${iso(NOW + 1000)}: the next run starts then`,
        NOW + 1000,
      ),
    ],
  },
];
