/**
 * Usage of a Gemini answer (docs/gateway.md#metering). `:streamGenerateContent?alt=sse` sends
 * `data:` chunks of GenerateContentResponse, each with cumulative `usageMetadata` and the totals on
 * the last: the last one seen wins. Without `?alt=sse` the answer is a JSON array of the same
 * chunks; `:generateContent` answers one. `promptTokenCount` includes the cached part
 * (`cachedContentTokenCount`); output as billed is `candidatesTokenCount` + `thoughtsTokenCount`;
 * `toolUsePromptTokenCount` is input too.
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

export function geminiUsage(u: Record<string, unknown> | undefined): MeteredUsage | undefined {
  if (!u) return undefined;
  const prompt = count(u.promptTokenCount);
  const candidates = count(u.candidatesTokenCount);
  const thoughts = count(u.thoughtsTokenCount);
  if (prompt === undefined && candidates === undefined && thoughts === undefined) return undefined;
  const cached = count(u.cachedContentTokenCount) ?? 0;
  const toolPrompt = count(u.toolUsePromptTokenCount) ?? 0;
  return {
    inputTokens: Math.max(0, (prompt ?? 0) + toolPrompt - cached),
    outputTokens: (candidates ?? 0) + (thoughts ?? 0),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
    ...(thoughts !== undefined ? { reasoningTokens: thoughts } : {}),
  };
}

export class GeminiUsageReader implements UsageReader {
  private usage: MeteredUsage | undefined;
  private model: string | undefined;
  private complete = false;

  event(e: SseEvent): void {
    // Every chunk is a candidate update; only chunks naming usage or a finish are worth parsing.
    if (!e.data.includes('"usageMetadata"') && !e.data.includes('"finishReason"')) return;
    this.chunk(parseJson(e.data));
  }

  body(value: unknown): void {
    if (Array.isArray(value)) for (const chunk of value) this.chunk(chunk);
    else this.chunk(value);
  }

  reading(): UsageReading {
    return { usage: this.usage && { ...this.usage }, model: this.model, complete: this.complete };
  }

  private chunk(value: unknown): void {
    const chunk = record(value);
    if (!chunk) return;
    if (typeof chunk.modelVersion === "string") this.model = chunk.modelVersion;
    this.usage = geminiUsage(record(chunk.usageMetadata)) ?? this.usage;
    const candidates = Array.isArray(chunk.candidates) ? chunk.candidates : [];
    if (candidates.some((c) => typeof record(c)?.finishReason === "string")) this.complete = true;
  }
}
