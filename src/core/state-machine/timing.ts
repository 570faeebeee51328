/**
 * The state machine's clock arithmetic: how long a batch may run, how far apart provider calls are,
 * when a failed submit is retried, and the time format of status fields. All from `input.now`.
 */
import type { BatchSubmitFailure } from "../input.js";

/** batch.timeoutMinutes default (24 h). */
export const DEFAULT_BATCH_TIMEOUT_MINUTES = 1440;
/** Failed cleanups after which the finalizer is removed anyway. */
export const MAX_CLEANUP_ATTEMPTS = 5;
/** An unsettled batch this long after startedAt is stuck: its cleanups count as failures. */
export const CLEANUP_STUCK_MS = 48 * 3600 * 1000;
/** Polls are at least this far apart, whatever BATCH_POLL_SECONDS says (0 means "every reconcile"). */
export const MIN_POLL_GAP_MS = 1000;
/** Cleanup attempts are spaced like the safety-net poll, so watch events cannot burn the 5 tries. */
export const CLEANUP_RETRY_MS = 15_000;
/** First wait after a transiently failed submit; doubles per failed attempt up to SUBMIT_RETRY_MAX_MS. */
export const SUBMIT_RETRY_BASE_MS = 15_000;
export const SUBMIT_RETRY_MAX_MS = 10 * 60_000;

/**
 * When a transiently failed submit may be tried again: the provider's Retry-After when it sent
 * one, else exponential backoff from SUBMIT_RETRY_BASE_MS. Never sooner than MIN_POLL_GAP_MS.
 */
export function submitRetryAt(f: BatchSubmitFailure): number {
  const backoff = Math.min(SUBMIT_RETRY_BASE_MS * 2 ** Math.max(0, f.attempts - 1), SUBMIT_RETRY_MAX_MS);
  return f.at + Math.max(f.retryAfterMs ?? backoff, MIN_POLL_GAP_MS);
}

/** The last second RFC 3339's four-digit years can write: 9999-12-31T23:59:59Z. */
export const MAX_RFC3339_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

/**
 * RFC 3339 UTC with second precision, like metav1.Time. Total: a time outside 1970…9999 (or not a
 * number) is written as the nearest end, never a RangeError that would fail every reconcile of
 * the Agent whose message names it.
 */
export function rfc3339(ms: number): string {
  const t = Number.isNaN(ms) ? 0 : Math.min(Math.max(ms, 0), MAX_RFC3339_MS);
  return new Date(Math.floor(t / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A metav1.Time (or Date) as epoch ms; undefined when absent or unparseable. */
export const ms = (t: string | Date | undefined): number | undefined => {
  if (t === undefined) return undefined;
  const v = new Date(t).getTime();
  return Number.isNaN(v) ? undefined : v;
};
