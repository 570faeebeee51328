/**
 * Sink retry settings and the backoff schedule (docs/events.md#delivery-guarantees). The controller reads the
 * AGENT_SINK_RETRY_* variables from its own environment with the pod defaults (docs/decisions.md D-37).
 */

export interface RetrySettings {
  /** Total attempts per event, at least 1 (1 = fire-and-forget). */
  attempts: number;
  /** The first backoff; doubles per retry. */
  baseMs: number;
  /** The backoff ceiling. */
  maxMs: number;
}

export const DEFAULT_RETRY: Readonly<RetrySettings> = { attempts: 3, baseMs: 200, maxMs: 5000 };

function parseInteger(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (!/^-?\d+$/.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Unset or unparseable values fall back to the defaults; attempts below 1 become 1. */
export function retryFromEnv(env: Record<string, string | undefined>): RetrySettings {
  const attempts = parseInteger(env.AGENT_SINK_RETRY_ATTEMPTS) ?? DEFAULT_RETRY.attempts;
  const baseMs = parseInteger(env.AGENT_SINK_RETRY_BASE_MS);
  const maxMs = parseInteger(env.AGENT_SINK_RETRY_MAX_MS);
  return {
    attempts: Math.max(1, attempts),
    baseMs: baseMs !== undefined && baseMs >= 0 ? baseMs : DEFAULT_RETRY.baseMs,
    maxMs: maxMs !== undefined && maxMs >= 0 ? maxMs : DEFAULT_RETRY.maxMs,
  };
}

/** The wait before the retry that follows failed attempt n (1-based): min(base × 2^(n−1), max). */
export function backoffMs(settings: RetrySettings, failedAttempt: number): number {
  return Math.min(settings.baseMs * 2 ** (failedAttempt - 1), settings.maxMs);
}

/** Every wait a never-succeeding event goes through: attempts − 1 of them. */
export function backoffSchedule(settings: RetrySettings): number[] {
  const waits: number[] = [];
  for (let n = 1; n < settings.attempts; n++) waits.push(backoffMs(settings, n));
  return waits;
}
