import { describe, expect, it } from "vitest";
import { type ProviderAnswer, providerAnswer } from "../../../core/provider-limits/index.js";
import type { ChildOutcome } from "../child-run.js";
import {
  type Attempt,
  AttemptWatcher,
  MAX_RETRIES_WITHOUT_DEADLINE,
  type RetryLoopOptions,
  type RetryWait,
  runWithProviderRetries,
} from "./attempts.js";

const failed: ChildOutcome = { kind: "exited", exitCode: 1 };
const ok: ChildOutcome = { kind: "exited", exitCode: 0 };
const limit = (status: number, retryAfterSeconds?: number): ProviderAnswer =>
  providerAnswer("anthropic", status, `answered ${status}`, retryAfterSeconds);

/** A loop over scripted attempts, on a clock that only moves when the loop sleeps. */
function harness(attempts: Attempt[], extra: Partial<RetryLoopOptions> = {}) {
  let now = 1_000_000;
  const argvs: string[][] = [];
  const waits: RetryWait[] = [];
  const giveUps: string[] = [];
  const sleeps: number[] = [];
  const options: RetryLoopOptions = {
    argv: ["cli", "--", "task"],
    attempt: async (argv) => {
      argvs.push([...argv]);
      now += 100;
      const next = attempts.shift();
      if (!next) throw new Error("no more attempts scripted");
      return next;
    },
    continuation: () => ["cli", "--resume", "s1", "--", "continue"],
    stopping: () => false,
    onWait: (w) => waits.push(w),
    onGiveUp: (why) => giveUps.push(why),
    clock: {
      now: () => now,
      random: () => 0.5,
      sleep: async (ms) => {
        sleeps.push(ms);
        now += ms;
        return true;
      },
    },
    ...extra,
  };
  return { options, argvs, waits, giveUps, sleeps, run: () => runWithProviderRetries(options) };
}

describe("a run riding out provider limits", () => {
  it("waits what the provider asked for, else backs off, and continues the session until it succeeds", async () => {
    const h = harness([
      { outcome: failed, answer: limit(429, 3) },
      { outcome: failed, answer: limit(529) },
      { outcome: failed, answer: limit(0) },
      { outcome: ok },
    ]);
    const result = await h.run();
    expect(result).toEqual({ outcome: ok, retries: 3, deadlineLeftNoRoom: false });
    expect(h.sleeps).toEqual([3_000, 7_500, 15_000]);
    expect(h.waits.map((w) => [w.retry, w.answer.status, w.waitMs])).toEqual([
      [1, 429, 3_000],
      [2, 529, 7_500],
      [3, 0, 15_000],
    ]);
    expect(h.argvs).toEqual([
      ["cli", "--", "task"],
      ["cli", "--resume", "s1", "--", "continue"],
      ["cli", "--resume", "s1", "--", "continue"],
      ["cli", "--resume", "s1", "--", "continue"],
    ]);
  });

  it("a permanent answer ends the run at once, with that answer", async () => {
    const h = harness([{ outcome: failed, answer: limit(401) }]);
    const result = await h.run();
    expect(result).toMatchObject({ outcome: failed, retries: 0, answer: { status: 401, retryable: false } });
    expect(h.sleeps).toEqual([]);
  });

  it("a failure without a provider answer (the CLI's own) is not retried", async () => {
    const h = harness([{ outcome: failed }]);
    expect(await h.run()).toEqual({ outcome: failed, retries: 0, deadlineLeftNoRoom: false });
  });

  it("the deadline: no wait that would end past it; the last answer is kept", async () => {
    const h = harness([{ outcome: failed, answer: limit(429, 30) }], { deadlineAt: 1_000_000 + 20_000 });
    const result = await h.run();
    expect(result).toMatchObject({ retries: 0, deadlineLeftNoRoom: true, answer: { status: 429 } });
    expect(h.giveUps[0]).toMatch(/the next retry, in 30 s, would start after the run's deadline/);
    expect(h.sleeps).toEqual([]);
  });

  it("retries as often as the deadline allows, then gives up with the last answer", async () => {
    const attempts = Array.from({ length: 20 }, () => ({ outcome: failed, answer: limit(503) }));
    const h = harness(attempts, { deadlineAt: 1_000_000 + 50_000 });
    const result = await h.run();
    // 3.75 s + 7.5 s + 15 s fit (plus the attempts' own time); the next 30 s would not.
    expect(h.sleeps).toEqual([3_750, 7_500, 15_000]);
    expect(result).toMatchObject({ retries: 3, deadlineLeftNoRoom: true, answer: { status: 503 } });
  });

  it("without a deadline a run is retried a bounded number of times", async () => {
    const attempts = Array.from({ length: 30 }, () => ({ outcome: failed, answer: limit(429, 1) }));
    const h = harness(attempts);
    const result = await h.run();
    expect(result.retries).toBe(MAX_RETRIES_WITHOUT_DEADLINE);
    expect(h.giveUps[0]).toMatch(/no deadline/);
  });

  it("a run that cannot be continued is not retried", async () => {
    const h = harness([{ outcome: failed, answer: limit(429) }], {
      continuation: () => "exec cannot continue a session from this command",
    });
    expect(await h.run()).toMatchObject({ retries: 0, deadlineLeftNoRoom: false });
    expect(h.giveUps).toEqual(["exec cannot continue a session from this command"]);
  });

  it("a stop during the wait ends the run with the last attempt's outcome; none starts after it", async () => {
    let stopped = false;
    const h = harness([{ outcome: failed, answer: limit(429) }, { outcome: ok }], {
      stopping: () => stopped,
    });
    h.options.clock.sleep = async () => {
      stopped = true;
      return false;
    };
    const result = await h.run();
    expect(result).toMatchObject({ outcome: failed, retries: 1 });
    expect(h.argvs).toHaveLength(1);
  });

  it("a realtime session counts its retries across turns", async () => {
    const h = harness([{ outcome: failed, answer: limit(429, 1) }, { outcome: ok }], { retriesBefore: 4 });
    await h.run();
    expect(h.waits.map((w) => w.retry)).toEqual([5]);
  });
});

describe("AttemptWatcher", () => {
  it("keeps the announced session and reads the last answer with the exit code", () => {
    const w = new AttemptWatcher("gemini", "gemini-2.5-pro");
    w.line(JSON.stringify({ type: "init", session_id: "g-1" }));
    w.line("not json");
    w.line(
      JSON.stringify({ type: "result", status: "error", error: { message: "[API Error: something new]" } }),
    );
    expect(w.sessionId).toBe("g-1");
    expect(w.answer({ kind: "exited", exitCode: 247 })).toMatchObject({ status: 503, retryable: true });
    expect(w.answer({ kind: "exited", exitCode: 1 })).toBeUndefined();
    expect(w.answer({ kind: "deadline", exitCode: 124 })).toBeUndefined();
  });
});

describe("AttemptWatcher.answered: a session worth continuing", () => {
  it.each([
    ["claude", ['{"type":"system","subtype":"init","session_id":"s1"}'], false],
    [
      "claude",
      ['{"type":"system","subtype":"init","session_id":"s1"}', '{"type":"assistant","message":{}}'],
      true,
    ],
    [
      "gemini",
      ['{"type":"init","session_id":"g1"}', '{"type":"message","role":"user","content":"hi"}'],
      false,
    ],
    ["gemini", ['{"type":"init","session_id":"g1"}', '{"type":"tool_use","tool_name":"write_file"}'], true],
    ["codex", ['{"type":"thread.started","thread_id":"t1"}', '{"type":"turn.started"}'], false],
    ["codex", ['{"type":"thread.started","thread_id":"t1"}', '{"type":"item.completed","item":{}}'], true],
  ] as const)("%s %j: %s", (vendor, lines, answered) => {
    const watcher = new AttemptWatcher(vendor, "");
    for (const line of lines) watcher.line(line);
    expect(watcher.answered).toBe(answered);
    expect(watcher.sessionId).toBeDefined();
  });
});
