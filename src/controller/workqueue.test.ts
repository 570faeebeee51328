import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_TIMER_DELAY_MS, retryDelay, timerDelay, WorkQueue } from "./workqueue.js";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("WorkQueue", () => {
  it("dedups a key that is queued but not yet running", async () => {
    const seen: string[] = [];
    const gate = deferred();
    const q = new WorkQueue(
      async (k) => {
        seen.push(k);
        if (k === "block") await gate.promise;
      },
      { concurrency: 1, retryDelayMs: 10 },
    );
    q.add("block");
    q.add("a");
    q.add("a");
    q.add("a");
    gate.resolve();
    await q.whenIdle();
    expect(seen).toEqual(["block", "a"]);
  });

  it("never runs one key twice at once and re-runs once if it changed mid-run", async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const gate = deferred();
    const q = new WorkQueue(
      async () => {
        running++;
        runs++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) await gate.promise;
        running--;
      },
      { concurrency: 4, retryDelayMs: 10 },
    );
    q.add("k");
    await new Promise((r) => setImmediate(r));
    q.add("k");
    q.add("k");
    q.add("k");
    gate.resolve();
    await q.whenIdle();
    await new Promise((r) => setImmediate(r));
    await q.whenIdle();
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it("runs different keys concurrently up to the limit", async () => {
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue(
      async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
      },
      { concurrency: 3, retryDelayMs: 10 },
    );
    for (let i = 0; i < 10; i++) q.add(`k${i}`);
    await q.whenIdle();
    expect(maxRunning).toBe(3);
  });

  it("retries a key whose handler threw", async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const done = deferred();
    const q = new WorkQueue(
      async () => {
        calls++;
        if (calls === 1) throw new Error("boom");
        done.resolve();
      },
      { concurrency: 1, retryDelayMs: 5, onError: (_k, e) => errors.push(e) },
    );
    q.add("k");
    await done.promise;
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
    await q.stop();
  });

  it("takes no work after stop", async () => {
    let calls = 0;
    const q = new WorkQueue(
      async () => {
        calls++;
      },
      { concurrency: 1, retryDelayMs: 5 },
    );
    await q.stop();
    q.add("k");
    await q.whenIdle();
    expect(calls).toBe(0);
  });

  describe("delays a timer can keep", () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it.each([
      { ms: 1000, out: 1000 },
      { ms: -5, out: 0 },
      { ms: 2 ** 31, out: MAX_TIMER_DELAY_MS },
      { ms: 3_000_000_000, out: MAX_TIMER_DELAY_MS },
      { ms: 9007199254740991 * 1000, out: MAX_TIMER_DELAY_MS },
      { ms: Number.POSITIVE_INFINITY, out: MAX_TIMER_DELAY_MS },
      { ms: Number.NaN, out: MAX_TIMER_DELAY_MS },
    ])("timerDelay($ms) is $out", ({ ms, out }) => {
      expect(timerDelay(ms)).toBe(out);
    });

    it.each([2 ** 31, 35 * 86_400_000, 8.64e15, Number.NaN, Number.POSITIVE_INFINITY])(
      "addAfter(%d) hands the timer at most 2^31-1 ms, so it does not fire at once",
      async (ms) => {
        const delays: number[] = [];
        const real = globalThis.setTimeout;
        vi.spyOn(globalThis, "setTimeout").mockImplementation(((_fn: () => void, d?: number) => {
          delays.push(d ?? 0);
          return real(() => {}, 0);
        }) as typeof setTimeout);
        let calls = 0;
        const q = new WorkQueue(
          async () => {
            calls++;
          },
          { concurrency: 1, retryDelayMs: 5 },
        );
        q.addAfter("k", ms);
        expect(delays).toEqual([MAX_TIMER_DELAY_MS]);
        expect(calls).toBe(0);
        await q.stop();
      },
    );

    it("keeps one timer per key, the earliest", async () => {
      const q = new WorkQueue(async () => {}, { concurrency: 1, retryDelayMs: 5 });
      for (let i = 0; i < 100; i++) q.addAfter("k", 3_600_000 + i);
      q.addAfter("k", 1_000_000);
      q.addAfter("other", 1_000_000);
      expect(q.delayed).toBe(2);
      await q.stop();
      expect(q.delayed).toBe(0);
    });

    it.each([
      { failures: 1, out: 1000 },
      { failures: 2, out: 2000 },
      { failures: 5, out: 16_000 },
      { failures: 7, out: 60_000 },
      { failures: 1000, out: 60_000 },
    ])("the retry after failure $failures in a row waits $out ms", ({ failures, out }) => {
      expect(retryDelay(1000, 60_000, failures)).toBe(out);
    });

    it("backs a failing key off, counting its failures in a row; a success resets the count", async () => {
      const delays: number[] = [];
      const real = globalThis.setTimeout;
      vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, d?: number) => {
        delays.push(d ?? 0);
        return real(fn, 0);
      }) as typeof setTimeout);
      const counts: number[] = [];
      let calls = 0;
      const done = deferred();
      const q = new WorkQueue(
        async () => {
          calls++;
          if (calls <= 3) throw new Error("boom");
          done.resolve();
        },
        { concurrency: 1, retryDelayMs: 100, maxRetryDelayMs: 300, onError: (_k, _e, n) => counts.push(n) },
      );
      q.add("k");
      await done.promise;
      await q.whenIdle();
      expect(counts).toEqual([1, 2, 3]);
      expect(delays).toEqual([100, 200, 300]);
      await q.stop();
    });
  });
});
