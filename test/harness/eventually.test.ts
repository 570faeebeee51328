import { describe, expect, it } from "vitest";
import { eventually, eventuallyPasses } from "./eventually.js";

/** A check that answers `answers[i]` on its i-th call (the last one from then on); an Error is thrown. */
function scripted<T>(...answers: T[]) {
  let calls = 0;
  const check = () => {
    const answer = answers[Math.min(calls, answers.length - 1)];
    calls += 1;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return Object.assign(check, { calls: () => calls });
}

describe("eventually (the value form)", () => {
  it.each([
    { name: "a value at once", answers: ["ready"], value: "ready", calls: 1 },
    { name: "undefined, then a value", answers: [undefined, undefined, 7], value: 7, calls: 3 },
    { name: "false, then a value", answers: [false, "x"], value: "x", calls: 2 },
    { name: "an error, then a value", answers: [new Error("404"), "x"], value: "x", calls: 2 },
    { name: "0 (a value, not a miss)", answers: [0], value: 0, calls: 1 },
    { name: "an empty string (a value)", answers: [""], value: "", calls: 1 },
    { name: "null (a value)", answers: [null], value: null, calls: 1 },
  ])("resolves with $name", async ({ answers, value, calls }) => {
    const check = scripted<unknown>(...answers);
    await expect(eventually("the thing", check, 5_000, 1)).resolves.toBe(value);
    expect(check.calls()).toBe(calls);
  });

  it("awaits a check that returns a promise", async () => {
    let n = 0;
    await expect(
      eventually("the thing", async () => (++n >= 2 ? { n } : undefined), 5_000, 1),
    ).resolves.toEqual({
      n: 2,
    });
  });

  it("at the deadline names what it waited for and the last error the check threw", async () => {
    const check = scripted<unknown>(new Error("first"), new Error("connection refused"));
    await expect(eventually("the Event ProviderLimitReached", check, 30, 1)).rejects.toThrow(
      /^timed out after 0\.03 s waiting for the Event ProviderLimitReached; last error: connection refused$/,
    );
  });

  it("reports the last error even when later checks only found nothing", async () => {
    const check = scripted<unknown>(new Error("connection refused"), undefined);
    await expect(eventually("x", check, 30, 1)).rejects.toThrow(/; last error: connection refused$/);
  });

  it("at the deadline without any error says only what it waited for", async () => {
    const check = scripted<unknown>(undefined);
    await expect(eventually("Agent a in Succeeded", check, 30, 1)).rejects.toThrow(
      /^timed out after 0\.03 s waiting for Agent a in Succeeded$/,
    );
    expect(check.calls()).toBeGreaterThan(1);
  });

  it("keeps the last error as the cause", async () => {
    const cause = new Error("403 Forbidden");
    const err = await eventually("x", scripted<unknown>(cause), 10, 1).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).cause).toBe(cause);
  });

  it("checks once even with no time at all", async () => {
    const check = scripted<unknown>("now");
    await expect(eventually("x", check, 0, 1)).resolves.toBe("now");
  });
});

describe("eventuallyPasses (the assertion form)", () => {
  it("re-runs the block until every expect in it passes and resolves with its result", async () => {
    const seen: number[] = [];
    let n = 0;
    const result = await eventuallyPasses(
      "the counter",
      () => {
        n += 1;
        seen.push(n);
        expect(n).toBeGreaterThan(1);
        expect(n % 3).toBe(0);
        return `passed at ${n}`;
      },
      5_000,
      1,
    );
    expect(result).toBe("passed at 3");
    expect(seen).toEqual([1, 2, 3]);
  });

  it("awaits an async block", async () => {
    let n = 0;
    await expect(
      eventuallyPasses(
        "x",
        async () => {
          n += 1;
          await Promise.resolve();
          expect(n).toBe(2);
        },
        5_000,
        1,
      ),
    ).resolves.toBeUndefined();
  });

  it("at the deadline throws the last assertion error, with expected and received", async () => {
    let n = 0;
    const err = await eventuallyPasses(
      "the ProviderLimitReached Event",
      () => {
        n += 1;
        // The first call fails on another assertion: it is not the one reported.
        if (n === 1) expect("first").toBe("never reported");
        expect({ type: "Warning", note: "held" }).toEqual({ type: "Normal", note: "held" });
      },
      30,
      1,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const assertion = err as Error & { expected?: unknown; actual?: unknown };
    expect(assertion.message).toMatch(
      /^the ProviderLimitReached Event: still failing after 0\.03 s: expected/,
    );
    expect(assertion.message).not.toContain("never reported");
    expect(assertion.expected).toEqual({ type: "Normal", note: "held" });
    expect(assertion.actual).toEqual({ type: "Warning", note: "held" });
  });

  it("at the deadline throws a non-Error the block threw inside an Error naming what", async () => {
    const err = await eventuallyPasses(
      "x",
      () => {
        throw "plain string";
      },
      10,
      1,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("x: still failing after 0.01 s: plain string");
  });
});
