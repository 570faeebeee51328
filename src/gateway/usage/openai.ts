/**
 * Usage of an OpenAI Responses answer (docs/gateway.md#metering). A stream carries it only in its
 * terminal event, `response.completed`, `response.incomplete` or `response.failed`
 * (`response.usage`); a non-streamed answer is the `Response` object itself. `input_tokens`
 * include the cached ones and `output_tokens` the reasoning ones: the cached part (and any explicit
 * cache write) is taken out of the input so each token is counted once.
 */
import type { SseEvent } from "../sse.js";
import {
  count,
  type MeteredUsage,
  parseJson,
  record,
  type UsageReader,
  type UsageReading,
} from "./reading.js";

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);
const WITH_MODEL = new Set(["response.created", "response.in_progress", ...TERMINAL]);

export function openAiUsage(u: Record<string, unknown> | undefined): MeteredUsage | undefined {
  if (!u) return undefined;
  const input = count(u.input_tokens);
  const output = count(u.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const inputDetails = record(u.input_tokens_details);
  const cached = count(inputDetails?.cached_tokens) ?? 0;
  const written = count(inputDetails?.cache_write_tokens) ?? 0;
  const reasoning = count(record(u.output_tokens_details)?.reasoning_tokens);
  return {
    inputTokens: Math.max(0, (input ?? 0) - cached - written),
    outputTokens: output ?? 0,
    cacheReadTokens: cached,
    cacheWriteTokens: written,
    ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}),
  };
}

export class OpenAiUsageReader implements UsageReader {
  private usage: MeteredUsage | undefined;
  private model: string | undefined;
  private complete = false;

  event(e: SseEvent): void {
    // The event name is the payload's `type`; a stream without `event:` lines is read by the payload.
    if (e.event !== undefined && !WITH_MODEL.has(e.event)) return;
    const value = record(parseJson(e.data));
    const type = typeof value?.type === "string" ? value.type : undefined;
    if (!value || type === undefined || !WITH_MODEL.has(type)) return;
    this.response(record(value.response));
    if (TERMINAL.has(type)) this.complete = true;
  }

  body(value: unknown): void {
    const response = record(value);
    if (response?.object !== "response") return;
    this.response(response);
    this.complete = this.usage !== undefined;
  }

  reading(): UsageReading {
    return { usage: this.usage && { ...this.usage }, model: this.model, complete: this.complete };
  }

  private response(response: Record<string, unknown> | undefined): void {
    if (!response) return;
    if (typeof response.model === "string") this.model = response.model;
    this.usage = openAiUsage(record(response.usage)) ?? this.usage;
  }
}
