/**
 * A per-key work queue: a key is never processed by two workers at once, and adding a key that
 * is already queued is a no-op. Adding a key while it is being processed marks it dirty, so it is
 * processed exactly once more afterwards (the event may carry state the running pass did not
 * see). This is the same contract as client-go's workqueue.
 */

export type Handler = (key: string) => Promise<void>;

/**
 * The longest delay a Node timer keeps: a longer one (or a negative, NaN or infinite one) fires
 * after 1 ms, which turned a far retry time into ~700 reconciles a second.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** A delay as a timer can keep it: within 0 … MAX_TIMER_DELAY_MS; NaN waits the longest (the poll comes sooner). */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms)) return MAX_TIMER_DELAY_MS;
  return Math.min(Math.max(ms, 0), MAX_TIMER_DELAY_MS);
}

/** The retry delay after the n-th failure in a row (1-based): base × 2^(n−1), at most `max`. */
export function retryDelay(base: number, max: number, failures: number): number {
  return timerDelay(Math.min(base * 2 ** Math.max(0, Math.min(failures - 1, 30)), max));
}

export interface WorkQueueOptions {
  concurrency: number;
  /** Delay before a key whose handler threw is retried the first time; doubled for each failure in a row. */
  retryDelayMs: number;
  /** The longest retry delay (default 60 s). */
  maxRetryDelayMs?: number;
  /** `failures`: the handler's failures in a row for this key, this one included. */
  onError?: (key: string, err: unknown, failures: number) => void;
}

/** Default of WorkQueueOptions.maxRetryDelayMs. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 60_000;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  /** One timer per key: the earliest time it is due (a later addAfter of the key waits for that one). */
  private readonly timers = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  /** Failures in a row per key, for the retry back-off; cleared when its handler succeeds. */
  private readonly failures = new Map<string, number>();
  private active = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly handler: Handler,
    private readonly opts: WorkQueueOptions,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /**
   * Adds the key after a delay (used for retries and timed re-checks), kept within what a timer can
   * wait (timerDelay). A key already due sooner keeps its time: its reconcile asks again.
   */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const delay = timerDelay(delayMs);
    const due = Date.now() + delay;
    const pending = this.timers.get(key);
    if (pending && pending.due <= due) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delay);
    timer.unref?.();
    this.timers.set(key, { due, timer });
  }

  /** Delayed adds waiting (tests). */
  get delayed(): number {
    return this.timers.size;
  }

  get length(): number {
    return this.queue.length;
  }

  /** True when nothing is queued or running. */
  get idle(): boolean {
    return this.queue.length === 0 && this.active === 0;
  }

  /** Resolves the next time the queue is idle. */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops taking work; resolves once running handlers have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    this.dirty.clear();
    await this.whenIdle();
  }

  private pump(): void {
    while (!this.stopped && this.active < this.opts.concurrency && this.queue.length > 0) {
      const key = this.queue.shift() as string;
      this.queued.delete(key);
      this.processing.add(key);
      this.active++;
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    try {
      await this.handler(key);
      this.failures.delete(key);
    } catch (err) {
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      this.opts.onError?.(key, err, failures);
      const max = this.opts.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
      this.addAfter(key, retryDelay(this.opts.retryDelayMs, max, failures));
    } finally {
      this.processing.delete(key);
      this.active--;
      if (this.dirty.delete(key)) this.add(key);
      this.pump();
      if (this.idle) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }
}
