/**
 * The tee's reading side (docs/gateway.md#metering): fed every byte already forwarded to the
 * client, it reads a streamed answer event by event and a plain JSON answer once whole (up to a
 * bound; a larger body is not metered and says so). Which of the two it is comes from the answer's
 * own content type, not from what the client asked for. An answer encoded despite the gateway's
 * `accept-encoding: identity` is forwarded as it is but not read, and says so.
 */
import { SseReader } from "../sse.js";
import type { GatewayVendor } from "../vendors.js";
import { AnthropicUsageReader } from "./anthropic.js";
import { GeminiUsageReader } from "./gemini.js";
import { OpenAiUsageReader } from "./openai.js";
import { parseJson, type UsageReader, type UsageReading } from "./reading.js";

/** A non-streamed answer larger than this is forwarded but not parsed. */
export const MAX_JSON_BODY_BYTES = 64 * 1024 * 1024;

export function usageReaderFor(vendor: GatewayVendor): UsageReader {
  switch (vendor) {
    case "anthropic":
      return new AnthropicUsageReader();
    case "openai":
      return new OpenAiUsageReader();
    case "gemini":
      return new GeminiUsageReader();
  }
}

export interface AnswerHeaders {
  contentType?: string;
  contentEncoding?: string;
}

export type Unreadable = "oversized" | "encoded";

export class Meter {
  private readonly sse: SseReader | undefined;
  private readonly json: Buffer[] | undefined;
  private readonly encoded: boolean;
  private jsonBytes = 0;
  private oversized = false;

  constructor(
    private readonly reader: UsageReader,
    answer: AnswerHeaders,
    private readonly maxJsonBytes = MAX_JSON_BODY_BYTES,
  ) {
    const type = (answer.contentType ?? "").toLowerCase();
    const encoding = (answer.contentEncoding ?? "identity").trim().toLowerCase();
    this.encoded = encoding !== "identity" && encoding !== "";
    if (this.encoded) return;
    if (type.includes("text/event-stream")) this.sse = new SseReader();
    else if (type.includes("json")) this.json = [];
  }

  push(chunk: Uint8Array): void {
    if (this.sse) {
      for (const e of this.sse.push(chunk)) this.reader.event(e);
    } else if (this.json && !this.oversized) {
      this.jsonBytes += chunk.byteLength;
      if (this.jsonBytes > this.maxJsonBytes) {
        this.oversized = true;
        this.json.length = 0;
      } else this.json.push(Buffer.from(chunk));
    }
  }

  /** The usage read so far plus whatever the end of the bytes completes. */
  finish(): UsageReading & { unreadable?: Unreadable } {
    if (this.sse) for (const e of this.sse.end()) this.reader.event(e);
    else if (this.json && !this.oversized && this.jsonBytes > 0) {
      const value = parseJson(Buffer.concat(this.json).toString("utf8"));
      if (value !== undefined) this.reader.body(value);
    }
    const unreadable: Unreadable | undefined = this.encoded
      ? "encoded"
      : this.oversized
        ? "oversized"
        : undefined;
    return { ...this.reader.reading(), ...(unreadable ? { unreadable } : {}) };
  }
}
