/**
 * How long the supervisor waits before it continues a session the provider limited
 * (docs/provider-limits.md#riding-out-a-limit). Pure; the randomness is injected.
 *
 * The wait the provider asked for (retry-after, RetryInfo) when the CLI showed it, at least one
 * second; otherwise an exponential backoff with jitter: the n-th retry waits between half and all
 * of min(base × 2^(n−1), MAX), so runs limited together do not come back together.
 */

/** AGENT_PROVIDER_RETRY_BASE_MS when unset: the first backoff (the CLI's own retries came first). */
export const DEFAULT_RETRY_BASE_MS = 5_000;
/** No backoff is longer. */
export const MAX_RETRY_WAIT_MS = 300_000;
/** Every wait is at least this long (the event counts whole seconds). */
export const MIN_RETRY_WAIT_MS = 1_000;

/**
 * The wait before retry `retry` (1 for the first). `retryAfterSeconds`: the provider's; `random`
 * returns a number in [0, 1).
 */
export function retryWaitMs(
  retry: number,
  retryAfterSeconds: number | undefined,
  random: () => number,
  baseMs = DEFAULT_RETRY_BASE_MS,
): number {
  if (retryAfterSeconds !== undefined)
    return Math.max(MIN_RETRY_WAIT_MS, Math.ceil(retryAfterSeconds) * 1000);
  const exponent = Math.min(Math.max(0, retry - 1), 30);
  const ceiling = Math.min(MAX_RETRY_WAIT_MS, baseMs * 2 ** exponent);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.max(MIN_RETRY_WAIT_MS, Math.round(ceiling / 2 + (ceiling / 2) * r));
}
