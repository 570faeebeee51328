/**
 * What the controller learns about one provider endpoint and key from its runs' outcomes
 * (docs/provider-limits.md#what-the-controller-learns): plain data, updated by pure functions; the
 * controller process keeps one record per endpoint and hands it to the reconcile core.
 *
 * The concurrent runs an endpoint takes are learned by additive increase, multiplicative decrease
 * (AIMD), as TCP learns a path's capacity:
 * - a throttle (a run that retried after 429/529/5xx, a batch submit answered 429) cuts the
 *   window: the first one to half the runs that were going (nothing was known; converge fast),
 *   later ones to 0.7 of it (CUBIC's factor: a shallower sawtooth keeps more of the capacity in
 *   use than halving, which would average three quarters of it); a throttle of a run that started before the
 *   last cut belongs to the episode that cut answered already and cuts nothing more (one cut per
 *   round, as one per round trip in TCP), so a burst of reports at the end of an episode does
 *   not collapse the window;
 * - the provider's retry-after holds every new start until it has passed;
 * - a run that ended without a provider retry, having started under the current window while the
 *   window was in use, widens it by 1/window: one more run per window's worth of clean runs.
 * An endpoint that has not throttled for FORGET_MS is trusted again (no window).
 */

/** One provider answer that made a run (or a batch submit) wait. */
export interface ThrottleSignal {
  /** anthropic, openai, gemini, … as the run reported it. */
  provider: string;
  /** HTTP status; 0 for a dropped connection. */
  status: number;
  /** Epoch ms the provider answered. */
  at: number;
  retryAfterSeconds?: number;
  /** The retry-after the run reported when it was beyond the maximum hold (retryAfterSeconds is then the maximum). */
  reportedRetryAfterSeconds?: number;
  /** The Agent whose run or submit it was. */
  agent: string;
  /** Epoch ms that run started (a batch submit: the attempt). */
  runStartedAt: number;
  /** Epoch ms that run ended, when it has: with runStartedAt, the run's lifetime `at` is kept within. */
  runEndedAt?: number;
  source: "run" | "batch";
}

export interface EndpointRecord {
  /** Concurrent runs the endpoint is believed to take (fractional between whole steps); absent: no limit learned. */
  window?: number;
  /** Epoch ms of the last cut of the window. */
  cutAt?: number;
  /** Epoch ms before which no run starts against the endpoint (the provider's retry-after). */
  holdUntil?: number;
  /** The latest throttle learned from. */
  lastThrottle?: ThrottleSignal;
  /** Epoch ms of the latest run start against the endpoint (Job created or batch submitted). */
  lastStartAt?: number;
  /** Tokens a finished run against the endpoint used, moving average; absent until one finished with usage. */
  tokensPerRun?: number;
  /** The Agent whose run last added to tokensPerRun (the reason names it). */
  tokensFrom?: string;
}

/** The first cut: half the runs going when the endpoint first throttled. */
export const FIRST_DECREASE_FACTOR = 0.5;
/** Every later cut multiplies the window by this. */
export const DECREASE_FACTOR = 0.7;
/** Two cuts are at least this far apart even when runs start quickly (batch submits). */
export const MIN_CUT_GAP_MS = 5_000;
/** New starts wait this long after a throttle the provider gave no retry-after for. */
export const DEFAULT_HOLD_MS = 15_000;
/** An endpoint that has not throttled for this long is trusted again. */
export const FORGET_MS = 30 * 60_000;
/** Weight of the newest run in the tokens-per-run average. */
export const TOKENS_WEIGHT = 0.2;
/**
 * The longest hold one throttle report makes (PROVIDER_MAX_HOLD_SECONDS): the report comes from a
 * run pod, where the agent could forge it, and must not hold every other Station on the endpoint
 * for long (docs/provider-limits.md#what-the-controller-learns).
 */
export const DEFAULT_MAX_HOLD_MS = 60 * 60_000;
/**
 * The most tokens one finished run adds to the tokens-per-run average: its usage comes from its
 * own log. Ten million tokens is far beyond what a run of any model reads and writes outside
 * the prompt cache in an hour.
 */
export const MAX_LEARNED_TOKENS_PER_RUN = 10_000_000;

/** `v` within [lo, hi]; `fallback` when it is not a number. */
function within(v: number, lo: number, hi: number, fallback: number): number {
  if (!Number.isFinite(v)) return fallback;
  return Math.min(Math.max(v, lo), hi);
}

/**
 * The throttle as far as it can be believed: its time within the run's lifetime (a run cannot be
 * answered before it started, after it ended, or in the future) and its retry-after at most the
 * maximum hold.
 */
export function boundedThrottle(t: ThrottleSignal, now: number, maxHoldMs: number): ThrottleSignal {
  const end = Math.min(now, Number.isFinite(t.runEndedAt) ? (t.runEndedAt as number) : now);
  const start = within(t.runStartedAt, Number.NEGATIVE_INFINITY, end, end);
  const at = within(t.at, start, end, end);
  const out: ThrottleSignal = { ...t, at, runStartedAt: start };
  if (t.retryAfterSeconds !== undefined) {
    const s = within(t.retryAfterSeconds, 0, Math.ceil(maxHoldMs / 1000), 0);
    if (s !== t.retryAfterSeconds) out.reportedRetryAfterSeconds = t.retryAfterSeconds;
    out.retryAfterSeconds = s;
  }
  return out;
}

/**
 * A throttle learned: the hold until the provider's retry-after (else DEFAULT_HOLD_MS), and a cut of
 * the window unless this throttle belongs to the episode the last cut answered. `inFlight`: the
 * runs against the endpoint that were going, the throttled one included.
 */
export function learnThrottle(
  rec: EndpointRecord | undefined,
  reported: ThrottleSignal,
  inFlight: number,
  now: number,
  maxHoldMs = DEFAULT_MAX_HOLD_MS,
): EndpointRecord {
  const out: EndpointRecord = { ...rec };
  const t = boundedThrottle(reported, now, maxHoldMs);
  const waitMs = Math.min(
    t.retryAfterSeconds !== undefined ? t.retryAfterSeconds * 1000 : DEFAULT_HOLD_MS,
    maxHoldMs,
  );
  const until = t.at + waitMs;
  if (until > now && until > (out.holdUntil ?? 0)) out.holdUntil = until;
  if (!out.lastThrottle || t.at >= out.lastThrottle.at) out.lastThrottle = t;
  const cut = out.cutAt;
  const newEpisode = cut === undefined || (t.runStartedAt > cut && now - cut >= MIN_CUT_GAP_MS);
  if (newEpisode) {
    const factor = out.window === undefined ? FIRST_DECREASE_FACTOR : DECREASE_FACTOR;
    const base = Math.min(out.window ?? Number.POSITIVE_INFINITY, Math.max(1, inFlight));
    out.window = Math.max(1, Math.floor(base * factor));
    out.cutAt = now;
  }
  return out;
}

/**
 * A run that ended without a provider retry. `inFlight`: the runs against the endpoint that were
 * going when it ended, itself included; the window only widens when it was in use.
 */
export function learnCleanRun(
  rec: EndpointRecord | undefined,
  runStartedAt: number,
  inFlight: number,
): EndpointRecord | undefined {
  if (rec?.window === undefined) return rec;
  if (rec.cutAt !== undefined && runStartedAt < rec.cutAt) return rec;
  if (inFlight < Math.floor(rec.window)) return rec;
  return { ...rec, window: rec.window + 1 / rec.window };
}

/** A finished run's tokens (at most MAX_LEARNED_TOKENS_PER_RUN), into the endpoint's tokens-per-run average. */
export function learnTokens(
  rec: EndpointRecord | undefined,
  reported: number,
  agent?: string,
): EndpointRecord | undefined {
  if (!(reported > 0)) return rec;
  const tokens = Math.min(reported, MAX_LEARNED_TOKENS_PER_RUN);
  const prev = rec?.tokensPerRun;
  const tokensPerRun = prev === undefined ? tokens : prev + TOKENS_WEIGHT * (tokens - prev);
  return { ...rec, tokensPerRun, ...(agent !== undefined ? { tokensFrom: agent } : {}) };
}

/** A run start against the endpoint. */
export function learnStart(rec: EndpointRecord | undefined, at: number): EndpointRecord {
  return { ...rec, lastStartAt: Math.max(at, rec?.lastStartAt ?? at) };
}

/** The record as it stands at `now`: a passed hold dropped, a window forgotten FORGET_MS after the last throttle. */
export function settle(rec: EndpointRecord | undefined, now: number): EndpointRecord | undefined {
  if (!rec) return rec;
  const out: EndpointRecord = { ...rec };
  if (out.holdUntil !== undefined && !(out.holdUntil > now)) delete out.holdUntil;
  if (out.lastThrottle && now - out.lastThrottle.at >= FORGET_MS && out.holdUntil === undefined) {
    delete out.window;
    delete out.cutAt;
    delete out.lastThrottle;
  }
  return out;
}

/** True when the record can hold a run: a hold in force or a learned window. */
export function restrains(rec: EndpointRecord | undefined): boolean {
  return rec?.window !== undefined || rec?.holdUntil !== undefined;
}
