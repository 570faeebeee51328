/**
 * A token bucket with an injected clock: `burst` tokens to start with, one more every
 * `refillEveryMs`, never more than `burst`. client-go's event spam filter uses one per object
 * (burst 25, one token per 5 minutes).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly burst: number,
    private readonly refillEveryMs: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Takes one token if there is one. */
  take(now: number): boolean {
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + (now - this.last) / this.refillEveryMs);
      this.last = now;
    }
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
