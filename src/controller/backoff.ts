/**
 * Exponential backoff with jitter for the watch loop, so a degraded API server is not hammered
 * by every replica in lockstep. Randomness is injected so the schedule is testable.
 */

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** Returns a number in [0, 1). */
  random: () => number;
}

/**
 * Delay before retry number `attempt` (0-based): the capped exponential step, of which a random
 * half is kept ("equal jitter"): the wait never drops below half the step, so retries still
 * spread out, and two callers with the same attempt count rarely collide.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions): number {
  const step = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(step / 2 + (step / 2) * opts.random());
}

/** Tracks consecutive failures; `reset` after any success. */
export class Backoff {
  private attempt = 0;
  constructor(private readonly opts: BackoffOptions) {}

  next(): number {
    const delay = backoffDelay(this.attempt, this.opts);
    this.attempt++;
    return delay;
  }

  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}
