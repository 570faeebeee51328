/**
 * The one place a run's log is read for what it cost (docs/cost-and-budgets.md#a-bill-the-agent-cannot-hide):
 * every line of the agent container's log passes through `LogMeter` once, as it streams in, so no
 * amount of output before or after the CLI's result line can push the usage out of what the
 * controller reads. It keeps, within fixed memory bounds:
 * - the text the output is cut from: the log's first `headBytes` and, past them, its last
 *   `tailLines` lines (what the two bounded reads used to return);
 * - every line that carries usage (`isUsageLine`), whole, up to `usageBytes`; a log with more
 *   usage-looking lines than that keeps the first and the last half of them and says so.
 * A metering component in front of the providers would replace this module's output. Pure.
 */
import { PROVIDER_LIMIT_KIND, parseProviderLimitEvent } from "./provider-limits/retry-event.js";
import { parseJsonLine } from "./vendors.js";

/** The line types the usage readers (src/core/pricing/run-usage.ts) take tokens or models from. */
const USAGE_TYPES = new Set([
  "result",
  "system",
  "thread.started",
  "turn.completed",
  "step_finish",
  "assistant",
]);

/** A line the usage readers need: cheap substring test first, JSON parse only for candidates. */
export function isUsageLine(line: string): boolean {
  // The supervisor's provider-limit events (status.providerRetries) are read back with the usage.
  if (line.includes(`"kind":"${PROVIDER_LIMIT_KIND}"`)) return parseProviderLimitEvent(line) !== undefined;
  if (!line.includes('"type"')) return false;
  const parsed = parseJsonLine(line);
  return parsed !== undefined && typeof parsed.type === "string" && USAGE_TYPES.has(parsed.type);
}

export interface LogMeterLimits {
  headBytes: number;
  tailLines: number;
  /** Bound of the kept usage lines, bytes. */
  usageBytes: number;
}

export interface MeteredLog {
  /** The output's source: the whole log, or its head and tail when it is longer than headBytes. */
  text: string;
  /** Every usage line, newline-separated (bounded, see `usageTruncated`). */
  usageLines: string;
  /** Usage lines were dropped from the middle because they exceeded usageBytes. */
  usageTruncated: boolean;
  totalBytes: number;
}

export class LogMeter {
  private partial: string[] = [];
  private partialLength = 0;
  private head: string[] = [];
  private headBytes = 0;
  private headFull = false;
  private tail: string[] = [];
  private tailBytes = 0;
  private usageHead: string[] = [];
  private usageHeadBytes = 0;
  private usageTail: string[] = [];
  private usageTailBytes = 0;
  private usageTruncated = false;
  private total = 0;

  constructor(private readonly limits: LogMeterLimits) {}

  /** A chunk of the log as it arrives (any split, also inside a line). */
  feed(chunk: string): void {
    this.total += Buffer.byteLength(chunk);
    let from = 0;
    for (let nl = chunk.indexOf("\n"); nl >= 0; nl = chunk.indexOf("\n", from)) {
      this.partial.push(chunk.slice(from, nl));
      this.line(this.partial.join(""));
      this.partial = [];
      this.partialLength = 0;
      from = nl + 1;
    }
    if (from < chunk.length) {
      // Pieces, not a growing string: a long line arriving in many chunks is joined once.
      this.partial.push(chunk.slice(from));
      this.partialLength += chunk.length - from;
    }
    // A line without end (no newline for megabytes) is taken as it is, so memory stays bounded.
    if (this.partialLength > this.limits.headBytes) {
      this.line(this.partial.join(""));
      this.partial = [];
      this.partialLength = 0;
    }
  }

  end(): MeteredLog {
    const endedWithNewline = this.partial.length === 0 && this.total > 0;
    if (this.partial.length > 0) this.line(this.partial.join(""), true);
    this.partial = [];
    this.partialLength = 0;
    const lines = this.headFull ? `${this.head.join("\n")}\n${this.tail.join("\n")}` : this.head.join("\n");
    const text = endedWithNewline ? `${lines}\n` : lines;
    return {
      text,
      usageLines: [...this.usageHead, ...this.usageTail].join("\n"),
      usageTruncated: this.usageTruncated,
      totalBytes: this.total,
    };
  }

  private line(line: string, last = false): void {
    const bytes = Buffer.byteLength(line) + (last ? 0 : 1);
    if (!this.headFull && this.headBytes + bytes <= this.limits.headBytes) {
      this.head.push(line);
      this.headBytes += bytes;
    } else {
      this.headFull = true;
      this.tail.push(line);
      this.tailBytes += bytes;
      // The tail is bounded like the head: by lines and by bytes.
      while (
        this.tail.length > 1 &&
        (this.tail.length > this.limits.tailLines || this.tailBytes > this.limits.headBytes)
      ) {
        this.tailBytes -= Buffer.byteLength(this.tail.shift() ?? "") + 1;
      }
    }
    if (isUsageLine(line)) this.usage(line, bytes);
  }

  private usage(line: string, bytes: number): void {
    const half = this.limits.usageBytes / 2;
    if (this.usageHeadBytes + bytes <= half && this.usageTail.length === 0) {
      this.usageHead.push(line);
      this.usageHeadBytes += bytes;
      return;
    }
    this.usageTail.push(line);
    this.usageTailBytes += bytes;
    while (this.usageTailBytes > half && this.usageTail.length > 1) {
      this.usageTailBytes -= Buffer.byteLength(this.usageTail.shift() ?? "") + 1;
      this.usageTruncated = true;
    }
  }
}
