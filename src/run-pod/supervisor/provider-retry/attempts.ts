/**
 * A run (or a realtime turn) that rides out provider limits (docs/provider-limits.md#riding-out-a-limit):
 * one CLI process after another on the same session, until one ends without a retryable
 * provider answer. Between them the supervisor waits what the provider asked for, else a backoff
 * with jitter, as long as the run's deadline leaves room for the wait.
 *
 * The loop decides; its caller runs the processes (child-run.ts), emits and logs. Clock, waits and
 * randomness are injected.
 */

import type { JsonLine, Vendor } from "../../../core/cli/vendors.js";
import { announcedSessionId, parseJsonLine } from "../../../core/cli/vendors.js";
import { attemptAnswer, mayCarryAnswer, type ProviderAnswer } from "../../../core/provider-limits/index.js";
import type { ChildOutcome } from "../child-run.js";
import { retryWaitMs } from "./backoff.js";

/** Without a deadline a run is retried at most this often (a Job run always has one). */
export const MAX_RETRIES_WITHOUT_DEADLINE = 10;

/**
 * Lines that only a model's answer produces (text, a tool call or its result), per the CLIs'
 * stream formats (docs/agent-clis.md): claude `assistant`/`user`, codex `item.*`, gemini
 * `message` (assistant) and `tool_use`/`tool_result`, opencode `text`/`tool_use`.
 */
function isModelOutput(line: JsonLine): boolean {
  switch (line.type) {
    case "assistant":
    case "user":
    case "item.started":
    case "item.completed":
    case "tool_use":
    case "tool_result":
    case "text":
      return true;
    case "message":
      return line.role === "assistant";
    default:
      return false;
  }
}

/** Reads one process's lines as they stream: its session and the provider's last answer. */
export class AttemptWatcher {
  private lastAnswerLine: JsonLine | undefined;
  private session: string | undefined;
  private modelAnswered = false;

  constructor(
    private readonly vendor: Vendor,
    private readonly model: string,
  ) {}

  line(line: string): void {
    const parsed = parseJsonLine(line);
    if (parsed === undefined) return;
    const id = announcedSessionId(this.vendor, parsed);
    if (id !== undefined) this.session = id;
    if (isModelOutput(parsed)) this.modelAnswered = true;
    if (mayCarryAnswer(this.vendor, parsed, this.model)) this.lastAnswerLine = parsed;
  }

  get sessionId(): string | undefined {
    return this.session;
  }

  /**
   * The model answered something in this process: its session holds a turn worth continuing. A
   * session announced before any answer (gemini announces one at start) is not: gemini 0.61 saves
   * no conversation for it and refuses to resume it (exit 42), and running the command again loses
   * nothing.
   */
  get answered(): boolean {
    return this.modelAnswered;
  }

  /** The provider's answer that ended the process (read with its exit code), if any. */
  answer(outcome: ChildOutcome): ProviderAnswer | undefined {
    if (outcome.kind !== "exited" && outcome.kind !== "stopped-after-terminal") return undefined;
    if (this.lastAnswerLine === undefined) return undefined;
    return attemptAnswer(this.vendor, [this.lastAnswerLine], outcome.exitCode, this.model);
  }
}

export interface Attempt {
  outcome: ChildOutcome;
  /** The provider's answer that ended it; undefined when it succeeded or failed on its own. */
  answer?: ProviderAnswer;
}

export interface RetryWait {
  answer: ProviderAnswer;
  /** 1 for the loop's first retry. */
  retry: number;
  waitMs: number;
  /** When the answer came (epoch ms). */
  at: number;
}

export interface ProviderRetryClock {
  now(): number;
  /** In [0, 1). */
  random(): number;
  /** Waits `ms`; resolves false when the wait was cut short (the run is stopping). */
  sleep(ms: number): Promise<boolean>;
}

export interface RetryLoopOptions {
  /** Runs one process with `argv`; `resumed` tells the first from the continuations. */
  attempt(argv: readonly string[], resumed: boolean): Promise<Attempt>;
  /** The argv continuing the session after a failed attempt, or why it cannot be continued. */
  continuation(): readonly string[] | string;
  argv: readonly string[];
  /** Epoch ms at which the agent is stopped; undefined: no deadline. */
  deadlineAt?: number;
  /** True once the run is stopping (a signal): no further attempt starts. */
  stopping(): boolean;
  /** Called before each wait (the event and the log line). */
  onWait(wait: RetryWait): void;
  /** Why the loop ended on a retryable answer without retrying it. */
  onGiveUp(why: string, answer: ProviderAnswer): void;
  clock: ProviderRetryClock;
  /** Retries already taken before this loop (a realtime session counts across its turns). */
  retriesBefore?: number;
  baseMs?: number;
}

export interface RetryLoopResult {
  /** The last process's outcome. */
  outcome: ChildOutcome;
  /** Its provider answer, when one ended it. */
  answer?: ProviderAnswer;
  retries: number;
  /** The deadline left no room for the wait a retryable answer needed. */
  deadlineLeftNoRoom: boolean;
}

export async function runWithProviderRetries(o: RetryLoopOptions): Promise<RetryLoopResult> {
  let retries = 0;
  let argv = o.argv;
  let resumed = false;
  for (;;) {
    const { outcome, answer } = await o.attempt(argv, resumed);
    const done = (deadlineLeftNoRoom = false): RetryLoopResult => ({
      outcome,
      ...(answer ? { answer } : {}),
      retries,
      deadlineLeftNoRoom,
    });
    if (answer === undefined || !answer.retryable || o.stopping()) return done();
    if (o.deadlineAt === undefined && retries >= MAX_RETRIES_WITHOUT_DEADLINE) {
      o.onGiveUp(`the run has no deadline and the provider was retried ${retries} times`, answer);
      return done();
    }
    const next = o.continuation();
    if (typeof next === "string") {
      o.onGiveUp(next, answer);
      return done();
    }
    const at = o.clock.now();
    const retry = (o.retriesBefore ?? 0) + retries + 1;
    const waitMs = retryWaitMs(retry, answer.retryAfterSeconds, () => o.clock.random(), o.baseMs);
    if (o.deadlineAt !== undefined && at + waitMs >= o.deadlineAt) {
      o.onGiveUp(
        `the next retry, in ${Math.ceil(waitMs / 1000)} s, would start after the run's deadline (${new Date(o.deadlineAt).toISOString()})`,
        answer,
      );
      return done(true);
    }
    o.onWait({ answer, retry, waitMs, at });
    retries += 1;
    const waited = await o.clock.sleep(waitMs);
    if (!waited || o.stopping()) return done();
    argv = next;
    resumed = true;
  }
}
