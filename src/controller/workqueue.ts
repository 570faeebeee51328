/**
 * A per-key work queue: a key is never processed by two workers at once, and adding a key that
 * is already queued is a no-op. Adding a key while it is being processed marks it dirty, so it is
 * processed exactly once more afterwards (the event may carry state the running pass did not
 * see). This is the same contract as client-go's workqueue.
 */

export type Handler = (key: string) => Promise<void>;

export interface WorkQueueOptions {
  concurrency: number;
  /** Delay before a key whose handler threw is retried. */
  retryDelayMs: number;
  onError?: (key: string, err: unknown) => void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
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

  /** Adds the key after a delay (used for retries and timed re-checks). */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.add(key);
    }, delayMs);
    t.unref?.();
    this.timers.add(t);
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
    for (const t of this.timers) clearTimeout(t);
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
    } catch (err) {
      this.opts.onError?.(key, err);
      this.addAfter(key, this.opts.retryDelayMs);
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
