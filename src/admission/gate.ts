/**
 * How many admission reviews run at once, and how many may wait for a turn. A review's memory is
 * its body and parsed object, so the count is what bounds the webhook's share of the heap.
 */
export class ReviewGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly maxActive: number,
    private readonly maxWaiting: number,
  ) {}

  /**
   * A release function once it is this caller's turn; undefined at once when the queue is full,
   * or after `maxWaitMs` without a turn (the API server has given up on the call by then).
   */
  async enter(maxWaitMs = Number.POSITIVE_INFINITY): Promise<(() => void) | undefined> {
    if (this.active >= this.maxActive) {
      if (this.waiting.length >= this.maxWaiting) return undefined;
      const turn = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer =
          maxWaitMs === Number.POSITIVE_INFINITY
            ? undefined
            : setTimeout(() => {
                this.waiting.splice(this.waiting.indexOf(wake), 1);
                resolve(false);
              }, maxWaitMs);
        this.waiting.push(wake);
      });
      if (!turn) return undefined;
    } else {
      this.active++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `active` stays as it is.
      if (next) next();
      else this.active--;
    };
  }
}
