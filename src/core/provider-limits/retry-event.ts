/**
 * The `provider-limit` event (docs/events.md#provider-limit-events): the run pod's supervisor
 * emits one before each wait for a provider that limited the run, and the controller sums them
 * into `status.providerRetries` when the run ends (docs/provider-limits.md#what-a-user-sees).
 * Pure.
 *
 * The events are printed in the run pod, where the agent runs: a forged line could claim retries
 * that never happened. So the summary is bounded by what the run could have done: no more waiting
 * than the run lasted, no more retries than that many seconds (every wait is at least one).
 */
import { type JsonLine, parseJsonLine } from "../cli/vendors.js";
import type { ProviderAnswer } from "./answer.js";

export const PROVIDER_LIMIT_KIND = "provider-limit";
/** The provider's words on an event, at most (a failure reason is capped alike). */
export const MAX_EVENT_MESSAGE = 512;

export interface ProviderLimitEvent {
  kind: typeof PROVIDER_LIMIT_KIND;
  provider: string;
  /** The HTTP status; 0 for a dropped connection. */
  status: number;
  /** 1 for the run's first retry, counted across the run (a realtime session: across its turns). */
  retry: number;
  /** The wait before the retry, whole seconds. */
  waitSeconds: number;
  /** The wait the provider asked for, when the CLI showed it. */
  retryAfterSeconds?: number;
  /** The realtime turn that waits. */
  turn?: number;
  /** When the answer came (RFC 3339, UTC). */
  at: string;
  /** The answer's kind (docs/provider-limits.md#recognising-a-limit). */
  reason: string;
  message: string;
}

/** The event for one wait, keys in wire order. */
export function providerLimitEvent(
  answer: ProviderAnswer,
  retry: number,
  waitMs: number,
  at: number,
  turn?: number,
): ProviderLimitEvent {
  const message =
    answer.message.length > MAX_EVENT_MESSAGE
      ? `${answer.message.slice(0, MAX_EVENT_MESSAGE - 1)}…`
      : answer.message;
  return {
    kind: PROVIDER_LIMIT_KIND,
    provider: answer.provider,
    status: answer.status,
    retry,
    waitSeconds: Math.ceil(waitMs / 1000),
    ...(answer.retryAfterSeconds !== undefined ? { retryAfterSeconds: answer.retryAfterSeconds } : {}),
    ...(turn !== undefined ? { turn } : {}),
    at: new Date(at).toISOString(),
    reason: answer.kind,
    message,
  };
}

const wholeNumber = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? v : undefined;

/** The event on this line, checked field by field; undefined for any other line. */
export function parseProviderLimitEvent(line: string | JsonLine): ProviderLimitEvent | undefined {
  const e =
    typeof line === "string" ? (line.includes(PROVIDER_LIMIT_KIND) ? parseJsonLine(line) : undefined) : line;
  if (e?.kind !== PROVIDER_LIMIT_KIND) return undefined;
  const status = wholeNumber(e.status);
  const retry = wholeNumber(e.retry);
  const waitSeconds = wholeNumber(e.waitSeconds);
  const at =
    typeof e.at === "string" && !Number.isNaN(Date.parse(e.at)) ? new Date(e.at).toISOString() : undefined;
  if (typeof e.provider !== "string" || status === undefined || retry === undefined) return undefined;
  if (waitSeconds === undefined || at === undefined) return undefined;
  const retryAfterSeconds = wholeNumber(e.retryAfterSeconds);
  const turn = wholeNumber(e.turn);
  return {
    kind: PROVIDER_LIMIT_KIND,
    provider: e.provider.slice(0, 253),
    status,
    retry,
    waitSeconds,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
    ...(turn !== undefined ? { turn } : {}),
    at,
    reason: typeof e.reason === "string" ? e.reason : "",
    message: typeof e.message === "string" ? e.message.slice(0, MAX_EVENT_MESSAGE) : "",
  };
}

/** `status.providerRetries` (the Agent CRD's ProviderRetries). */
export interface ProviderRetries {
  count: number;
  waitedSeconds: number;
  last?: { provider: string; status: number; at: string; retryAfterSeconds?: number };
}

/**
 * The run's provider retries from its log lines; undefined when it took none. `runSeconds` (how
 * long the run lasted, when known) bounds what a forged line could claim; `lifetime` (epoch ms the
 * run started and ended, when known) bounds when the last answer came.
 */
export function providerRetriesOf(
  lines: string,
  runSeconds?: number,
  lifetime?: RunLifetime,
): ProviderRetries | undefined {
  return tallied(lines).retries(runSeconds, lifetime);
}

/** When a run ran, in ms since the epoch: its start and the time it was read back. */
export type RunLifetime = { from: number; to: number };

/** An answer's time (RFC 3339) kept within the run's lifetime: it cannot be answered before it started or after it ended. */
function withinLifetime(at: string, lifetime: RunLifetime): string {
  const t = Date.parse(at);
  const kept = Math.min(Math.max(t, lifetime.from), Math.max(lifetime.from, lifetime.to));
  return kept === t ? at : new Date(kept).toISOString();
}

/**
 * The provider's last answer in words, for a failure reason: `anthropic 429: <message>`. A dropped
 * connection is not an answer: when the provider answered before the drops, the answer is named
 * first and the last drop after it (`gemini 429: <message>; after it: no answer (connection
 * dropped): <message>`), so a run that waited out a limit and then lost a connection still says
 * which limit it waited for.
 */
export function lastProviderAnswer(lines: string): string | undefined {
  return tallied(lines).lastAnswer();
}

function tallied(lines: string): ProviderLimitTally {
  const tally = new ProviderLimitTally();
  for (const line of lines.split("\n")) {
    const event = parseProviderLimitEvent(line);
    if (event !== undefined) tally.add(event);
  }
  return tally;
}

/**
 * The provider-limit events of a run as they stream by (src/core/readback/log-meter.ts): counts and the
 * last events only, O(1) per event, for `retries` and `lastAnswer`.
 */
export class ProviderLimitTally {
  private count = 0;
  private waited = 0;
  private last: ProviderLimitEvent | undefined;
  private lastAnswered: ProviderLimitEvent | undefined;
  private lastDrop: ProviderLimitEvent | undefined;

  add(event: ProviderLimitEvent): void {
    this.count += 1;
    this.waited = Math.min(this.waited + event.waitSeconds, Number.MAX_SAFE_INTEGER);
    this.last = event;
    if (event.status === 0) this.lastDrop = event;
    else {
      this.lastAnswered = event;
      this.lastDrop = undefined;
    }
  }

  /**
   * The run's provider retries; undefined when it took none. `runSeconds` bounds what a forged line
   * could claim, and the last answer's time is kept within the run's `lifetime`.
   */
  retries(runSeconds?: number, lifetime?: RunLifetime): ProviderRetries | undefined {
    const last = this.last;
    if (last === undefined) return undefined;
    const bound = runSeconds === undefined ? Number.MAX_SAFE_INTEGER : Math.max(1, Math.ceil(runSeconds));
    return {
      count: Math.min(this.count, bound),
      waitedSeconds: Math.min(this.waited, bound, Number.MAX_SAFE_INTEGER),
      last: {
        provider: last.provider,
        status: last.status,
        at: lifetime ? withinLifetime(last.at, lifetime) : last.at,
        ...(last.retryAfterSeconds !== undefined ? { retryAfterSeconds: last.retryAfterSeconds } : {}),
      },
    };
  }

  /** See lastProviderAnswer. */
  lastAnswer(): string | undefined {
    const { lastAnswered, lastDrop } = this;
    const words = (e: ProviderLimitEvent, what: string) => `${what}${e.message ? `: ${e.message}` : ""}`;
    const drop = lastDrop && words(lastDrop, "no answer (connection dropped)");
    if (lastAnswered === undefined) return lastDrop && `${lastDrop.provider} ${drop}`;
    const answer = `${lastAnswered.provider} ${words(lastAnswered, String(lastAnswered.status))}`;
    return drop ? `${answer}; after it: ${drop}` : answer;
  }
}
