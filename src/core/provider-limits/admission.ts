/**
 * Whether a Pending Agent may start against its provider endpoint now (docs/provider-limits.md):
 * the limits its Station declares (spec.providerLimits) and the ones the controller learned from
 * the provider's answers (learner.ts). Pure: the controller passes what it knows in.
 *
 * Order within a Station is kept: the Station's older waiting Agents against the same endpoint
 * count as starting before this one (as ../station-limits/concurrency.ts counts them for the Station's own limit),
 * so a younger Agent never takes the turn of an older one.
 */
import { queueOrder } from "../station-limits/concurrency.js";
import { type Agent, phaseOf, type Station } from "../types.js";
import { describeEndpoint, type ProviderEndpoint } from "./endpoint.js";
import { DEFAULT_MAX_HOLD_MS, type EndpointRecord } from "./learner.js";

/** What the controller knows of the endpoint of one Pending Agent, for its reconcile. */
export interface ProviderInput {
  /** The Agent's endpoint and key, as providerEndpointOf resolves it. */
  endpoint: ProviderEndpoint;
  /** Runs against the endpoint going (Running or being started), every Station's, this Agent's excluded. */
  running: number;
  /** Names of the Agents against the endpoint that wait (Pending), every Station's. */
  waiting: string[];
  /** What the controller learned of the endpoint; absent when nothing. */
  record?: EndpointRecord;
}

export type ProviderReason = "ProviderThrottled" | "ProviderLimitReached";

export type ProviderVerdict =
  | { kind: "start" }
  | { kind: "hold"; reason: ProviderReason; message: string; retryAt?: number };

/** A time the message promises, rounded up to the second it is shown with. */
const upToSecond = (ms: number) => Math.ceil(ms / 1000) * 1000;

const seconds = (ms: number) => {
  const s = ms / 1000;
  return `${s >= 10 ? Math.round(s) : Number(s.toFixed(1))} s`;
};

/** Older Agents of this Station, waiting against the same endpoint, not yet started. */
function aheadInStation(agent: Agent, stationAgents: Agent[], waiting: string[], issued: string[]): number {
  const same = new Set(waiting);
  const started = new Set(issued);
  const self = agent.metadata.name;
  return stationAgents.filter(
    (a) =>
      a.metadata.name !== self &&
      same.has(a.metadata.name ?? "") &&
      phaseOf(a) === "Pending" &&
      !a.metadata.deletionTimestamp &&
      !started.has(a.metadata.name ?? "") &&
      queueOrder(a, agent) < 0,
  ).length;
}

function throttledBy(rec: EndpointRecord, e: ProviderEndpoint, rfc3339: (ms: number) => string): string {
  const t = rec.lastThrottle;
  if (!t) return `${describeEndpoint(e)} throttled`;
  const status = t.status === 0 ? "dropped the connection" : `answered ${t.status}`;
  const after =
    t.reportedRetryAfterSeconds !== undefined
      ? ` with retry-after ${t.reportedRetryAfterSeconds} s (held at most ${t.retryAfterSeconds} s, PROVIDER_MAX_HOLD_SECONDS)`
      : t.retryAfterSeconds !== undefined
        ? ` with retry-after ${t.retryAfterSeconds} s`
        : "";
  const what = t.source === "batch" ? `a batch submit of Agent ${t.agent}` : `the run of Agent ${t.agent}`;
  return `${describeEndpoint(e)} ${status}${after} at ${rfc3339(t.at)} to ${what}`;
}

export interface AdmissionArgs {
  agent: Agent;
  station: Station;
  stationAgents: Agent[];
  pendingCreations: string[];
  provider: ProviderInput | undefined;
  now: number;
  rfc3339: (ms: number) => string;
  /** PROVIDER_MAX_HOLD_SECONDS in ms: the longest one run's report (a retry-after, its tokens) holds a start. */
  maxHoldMs?: number;
}

/** Start, or hold with the reason, the message (which provider, which limit, when the next run starts) and the retry time. */
export function providerVerdict(a: AdmissionArgs): ProviderVerdict {
  const p = a.provider;
  if (!p) return { kind: "start" };
  const e = p.endpoint;
  const rec = p.record ?? {};
  const declared = a.station.spec.providerLimits ?? {};
  const stationName = a.station.metadata?.name ?? a.agent.spec.stationRef;
  const ahead = aheadInStation(a.agent, a.stationAgents, p.waiting, a.pendingCreations);
  const before = p.running + ahead;

  if (rec.holdUntil !== undefined && a.now < rec.holdUntil) {
    // The learner bounds the hold already; bounded here too, so no record can hold longer.
    const until = Math.min(rec.holdUntil, a.now + maxHold(a));
    return {
      kind: "hold",
      reason: "ProviderThrottled",
      message: `${throttledBy(rec, e, a.rfc3339)}; no run starts against it before ${a.rfc3339(upToSecond(until))}: the next run starts then`,
      retryAt: until,
    };
  }
  const allowed = declared.concurrentRuns;
  if (allowed !== undefined && before >= allowed) {
    return {
      kind: "hold",
      reason: "ProviderLimitReached",
      message: `Station ${stationName} allows ${allowed} concurrent run${allowed === 1 ? "" : "s"} against ${describeEndpoint(e)} (providerLimits.concurrentRuns) and ${allowed === 1 ? "it is" : "they are all"} taken; the next run starts when one of them ends`,
    };
  }
  if (rec.window !== undefined && before >= Math.floor(rec.window)) {
    const w = Math.floor(rec.window);
    return {
      kind: "hold",
      reason: "ProviderThrottled",
      message: `${throttledBy(rec, e, a.rfc3339)}; the controller now starts at most ${w} concurrent run${w === 1 ? "" : "s"} against it and ${w === 1 ? "it is" : "they are all"} taken; the next run starts when one of them ends`,
    };
  }
  return rateVerdict(a, p, rec, stationName, ahead, before);
}

const maxHold = (a: AdmissionArgs) => a.maxHoldMs ?? DEFAULT_MAX_HOLD_MS;

/** Run starts per minute from requestsPerMinute and tokensPerMinute, evenly spaced. */
function rateVerdict(
  a: AdmissionArgs,
  p: ProviderInput,
  rec: EndpointRecord,
  stationName: string,
  ahead: number,
  before: number,
): ProviderVerdict {
  const declared = a.station.spec.providerLimits ?? {};
  const e = describeEndpoint(p.endpoint);
  const spacings: { ms: number; why: string }[] = [];
  if (declared.requestsPerMinute !== undefined) {
    const ms = 60_000 / declared.requestsPerMinute;
    spacings.push({
      ms,
      why: `Station ${stationName} allows ${declared.requestsPerMinute} requests per minute against ${e} (providerLimits.requestsPerMinute), and a run makes at least one: one run start every ${seconds(ms)}`,
    });
  }
  const tpm = declared.tokensPerMinute;
  if (tpm !== undefined) {
    if (rec.tokensPerRun === undefined) {
      // Nothing tells a run's tokens before one has ended: one run at a time until then.
      if (before >= 1) {
        return {
          kind: "hold",
          reason: "ProviderLimitReached",
          message: `Station ${stationName} allows ${tpm} tokens per minute against ${e} (providerLimits.tokensPerMinute); until a run against it has ended and told its tokens, runs start one at a time: the next run starts when the one going ends`,
        };
      }
    } else {
      // The tokens per run are what runs reported: the spacing they make is at most the maximum hold.
      const spacing = (60_000 * rec.tokensPerRun) / tpm;
      const ms = Math.min(spacing, maxHold(a));
      const capped = ms < spacing ? ` (at most ${seconds(ms)}, PROVIDER_MAX_HOLD_SECONDS)` : "";
      const from =
        rec.tokensFrom !== undefined ? ` (last reported by the run of Agent ${rec.tokensFrom})` : "";
      spacings.push({
        ms,
        why: `Station ${stationName} allows ${tpm} tokens per minute against ${e} (providerLimits.tokensPerMinute); at about ${Math.round(rec.tokensPerRun)} tokens per run${from} that is one run start every ${seconds(spacing)}${capped}`,
      });
    }
  }
  if (spacings.length === 0) return { kind: "start" };
  const binding = spacings.reduce((x, y) => (y.ms > x.ms ? y : x));
  const next = rec.lastStartAt === undefined ? a.now : rec.lastStartAt + binding.ms;
  if (ahead === 0 && a.now >= next) return { kind: "start" };
  const when =
    next > a.now
      ? `the next run starts at ${a.rfc3339(upToSecond(next))}`
      : `the older Agents waiting in Station ${stationName}'s queue start first`;
  return {
    kind: "hold",
    reason: "ProviderLimitReached",
    message: `${binding.why}; ${when}`,
    // Its own turn: after those ahead of it, one spacing each.
    retryAt: Math.max(next, a.now) + ahead * binding.ms,
  };
}
