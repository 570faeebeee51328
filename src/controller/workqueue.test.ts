import { describe, expect, it } from "vitest";
import { WorkQueue } from "./workqueue.js";

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
});
