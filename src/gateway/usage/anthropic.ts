/**
 * Usage of an Anthropic Messages answer (docs/gateway.md#metering). A stream carries it in
 * `message_start.message.usage` (input, cache creation, cache read, a first output count) and in
 * every `message_delta.usage`, whose counts are cumulative and may repeat: the latest value of
 * each field wins, never a sum. Some backends put the input and cache counts on `message_delta`
 * only, so any field a delta carries replaces the one before. A non-streamed answer is a
 * `Message` with the same `usage`.
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

export class AnthropicUsageReader implements UsageReader {
  private usage: MeteredUsage | undefined;
  private model: string | undefined;
  private complete = false;

  event(e: SseEvent): void {
    const name = e.event;
    // Only these events carry usage or the end; the text deltas are not parsed at all.
    if (name !== "message_start" && name !== "message_delta" && name !== "message_stop") return;
    if (name === "message_stop") {
      this.complete = true;
      return;
    }
    const value = record(parseJson(e.data));
    if (!value) return;
    if (name === "message_start") {
      const message = record(value.message);
      if (typeof message?.model === "string") this.model = message.model;
      this.merge(record(message?.usage));
    } else {
      this.merge(record(value.usage));
    }
  }

  body(value: unknown): void {
    const message = record(value);
    if (message?.type !== "message") return;
    if (typeof message.model === "string") this.model = message.model;
    this.merge(record(message.usage));
    this.complete = this.usage !== undefined;
  }

  reading(): UsageReading {
    return { usage: this.usage && { ...this.usage }, model: this.model, complete: this.complete };
  }

  private merge(u: Record<string, unknown> | undefined): void {
    if (!u) return;
    const next: MeteredUsage = this.usage ?? {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    };
    next.inputTokens = count(u.input_tokens) ?? next.inputTokens;
    next.outputTokens = count(u.output_tokens) ?? next.outputTokens;
    next.cacheReadTokens = count(u.cache_read_input_tokens) ?? next.cacheReadTokens;
    next.cacheWriteTokens = count(u.cache_creation_input_tokens) ?? next.cacheWriteTokens;
    const oneHour = count(record(u.cache_creation)?.ephemeral_1h_input_tokens);
    if (oneHour !== undefined) next.cacheWrite1hTokens = oneHour;
    this.usage = next;
  }
}
