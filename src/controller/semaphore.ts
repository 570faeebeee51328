/**
 * At most `limit` holders at once, the rest wait in arrival order. The controller bounds its
 * concurrent pod log reads with one (LOG_READ_CONCURRENCY): each read streams a whole log through
 * the meter, and ten hostile logs finishing at once must not all be read at the same time.
 */
export class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];
  private next = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`semaphore limit must be a positive integer, got ${limit}`);
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.held < this.limit) {
      this.held += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const wake = this.waiting[this.next];
    if (wake === undefined) {
      this.held -= 1;
      return;
    }
    // The slot passes to the next waiter; the queue is compacted now and then, not shifted per release.
    this.waiting[this.next] = () => {};
    this.next += 1;
    if (this.next > 64 && this.next * 2 > this.waiting.length) {
      this.waiting.splice(0, this.next);
      this.next = 0;
    }
    wake();
  }
}
