import { describe, expect, it } from "vitest";
import { ReviewGate } from "./gate.js";

describe("ReviewGate", () => {
  it("lets maxActive in, queues maxWaiting, refuses the rest, and hands a released slot to the next waiter", async () => {
    const gate = new ReviewGate(1, 1);
    const first = await gate.enter();
    expect(first).toBeDefined();
    let secondIn = false;
    const second = gate.enter().then((r) => {
      secondIn = true;
      return r;
    });
    expect(await gate.enter()).toBeUndefined();
    await Promise.resolve();
    expect(secondIn).toBe(false);
    first?.();
    first?.(); // a second release of the same turn frees nothing more
    const release = await second;
    expect(secondIn).toBe(true);
    // One running, nobody waiting: the next caller waits, a further one is refused.
    const third = gate.enter();
    expect(await gate.enter()).toBeUndefined();
    release?.();
    (await third)?.();
    expect(await gate.enter()).toBeDefined();
  });

  it("gives up on a caller that waited maxWaitMs, and its place does not swallow a later slot", async () => {
    const gate = new ReviewGate(1, 4);
    const first = await gate.enter();
    expect(await gate.enter(10)).toBeUndefined();
    const next = gate.enter(60_000);
    first?.();
    const release = await next;
    expect(release).toBeDefined();
    release?.();
    expect(await gate.enter(10)).toBeDefined();
  });
});
