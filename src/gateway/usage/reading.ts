/**
 * What one metered answer says it used, in the four kinds the price table knows
 * (docs/cost-and-budgets.md): `inputTokens` are neither read from nor written to the cache, so
 * each token is in exactly one field. Each vendor's reader turns its own fields into this.
 */
import type { SseEvent } from "../sse.js";

export interface MeteredUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written to Anthropic's one-hour cache, when the answer says. */
  cacheWrite1hTokens?: number;
  /** The part of `outputTokens` spent on reasoning (OpenAI) or thoughts (Gemini), when the answer says. */
  reasoningTokens?: number;
}

export interface UsageReading {
  /** Undefined when the answer carried no usage at all (an error, a stream cut before its first event). */
  usage?: MeteredUsage;
  /** The model the provider says answered. */
  model?: string;
  /** Whether the provider's last event arrived (`message_stop`, a terminal `response.*`, a finish reason). */
  complete: boolean;
}

/** One vendor's reader: fed the forwarded answer, asked at the end. */
export interface UsageReader {
  /** One event of a streamed answer. */
  event(e: SseEvent): void;
  /** The parsed JSON body of an answer that was not streamed. */
  body(value: unknown): void;
  reading(): UsageReading;
}

/** A count as the provider sent it: a non-negative integer, else undefined. */
export function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

export function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** JSON.parse that answers undefined instead of throwing: a provider event we cannot read is skipped. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
