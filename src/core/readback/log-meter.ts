/**
 * The one place a run's log is read (docs/cost-and-budgets.md#a-bill-the-agent-cannot-hide): every
 * line of a container's log passes through `LogMeter` once, as it streams in, and leaves only
 * running sums and last values behind, so no amount of output before or after the CLI's result
 * line can push the usage, the session id or the delivery out of what the controller reads, and
 * neither memory nor the work per line grows with the log:
 * - the output's source: the log's last `keepBytes` bytes, and how many came before them
 *   (status.output is the log's truncated tail, capped at MAX_OUTPUT_BYTES);
 * - the run's tokens and cost (`RunUsageMeter`: running sums per vendor, each part priced once);
 * - the last session event's id, the CLI's last error, the provider-limit tally, the courier's
 *   last delivery event;
 * - what could not be read: lines longer than MAX_LINE_BYTES (not parsed), and whether the
 *   supervisor's `agent/started` and closing events were seen (a log whose beginning the kubelet
 *   rotated away has the closing event without the first).
 * Each line is parsed once, and only when it can be a JSON object. A metering component in front
 * of the providers would replace this module's usage. Pure.
 */

import type { Vendor } from "../cli/routing.js";
import { announcedSessionId, cliErrorMessage, type JsonLine, parseJsonLine } from "../cli/vendors.js";
import { type RunUsage, RunUsageMeter, type RunUsagePlan } from "../pricing/run-usage.js";
import {
  PROVIDER_LIMIT_KIND,
  ProviderLimitTally,
  type ProviderRetries,
  parseProviderLimitEvent,
  type RunLifetime,
} from "../provider-limits/retry-event.js";

/**
 * The longest line the meter parses, bytes. No CLI prints a usage, session or delivery line this
 * long; a longer line is counted as unread (`unreadLines`) and skipped, so one line without end
 * neither fills memory nor blocks the event loop in one JSON.parse.
 */
export const MAX_LINE_BYTES = 2 * 1024 * 1024;
/** How the supervisor marks a line the CLI wrote to stderr in the agent container's log. */
export const AGENT_STDERR_PREFIX = "[agent] ";
/** The longest CLI error or delivery reason kept (a failure reason is built from it). */
export const MAX_ERROR_CHARS = 512;
/** What is kept of an error text before it is flattened (whitespace runs shrink to one space). */
const KEPT_TEXT_CHARS = 8 * MAX_ERROR_CHARS;

export interface LogMeterPlan {
  /** Whose lines these are: which session events and error lines count. */
  vendor: Vendor;
  /** How the usage lines are priced; absent: the usage is not read (init and courier logs). */
  usage?: RunUsagePlan;
  /** How long the run lasted, seconds, when known: bounds the provider-limit tally. */
  runSeconds?: number;
  /** When the run ran, when known: its last provider answer's time is kept inside it. */
  lifetime?: RunLifetime;
  /** How many bytes of the log's end are kept for the output (MAX_OUTPUT_BYTES). */
  keepBytes: number;
}

/** What one container's log said, in fixed memory. Plain data (it rides in ReconcileInput). */
export interface LogFacts {
  /** The last session event's id; "" when none. Not yet checked (src/core/readback/agent-strings.ts). */
  sessionId: string;
  /** The CLI's last error in its own words (see lastCliError); "" when it said nothing. */
  cliError: string;
  /** The provider's last answer in words (lastProviderAnswer). */
  providerAnswer?: string;
  providerRetries?: ProviderRetries;
  /** The run's tokens and cost, when the plan asked for them and the lines carried any. */
  usage?: RunUsage;
  /** The url of the courier's last delivery event carrying one; "". */
  pullRequestUrl: string;
  /** The reason of the last delivery event, when it failed. */
  deliveryFailure?: string;
  totalBytes: number;
  /** Lines longer than MAX_LINE_BYTES, skipped unread. */
  unreadLines: number;
  /** The supervisor's `agent/started` event was in the log. */
  started: boolean;
  /** The supervisor's closing `agent/succeeded` or `agent/failed` event was in the log. */
  ended: boolean;
}

export interface MeteredLog {
  /** The log's last bytes (at least `keepBytes` when the log is longer), for the output. */
  text: string;
  /** Bytes of the log before `text`. */
  droppedBytes: number;
  facts: LogFacts;
}

/** Flattened to one line and cut to MAX_ERROR_CHARS characters. */
export function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_ERROR_CHARS ? `${flat.slice(0, MAX_ERROR_CHARS - 1)}…` : flat;
}

export class LogMeter {
  private partial: string[] = [];
  private partialBytes = 0;
  /** The current line is longer than MAX_LINE_BYTES: the rest of it is skipped. */
  private skipping = false;
  /** The kept chunks from `tailStart` on, with their sizes. */
  private tail: { text: string; bytes: number }[] = [];
  private tailStart = 0;
  private tailBytes = 0;
  private total = 0;
  private readonly usage: RunUsageMeter | undefined;
  private readonly limits = new ProviderLimitTally();
  private sessionId = "";
  private reported = "";
  private stderr = "";
  private supervisor = "";
  private pullRequestUrl = "";
  private deliveryFailure: string | undefined;
  private unreadLines = 0;
  private started = false;
  private ended = false;

  constructor(private readonly plan: LogMeterPlan) {
    this.usage = plan.usage ? new RunUsageMeter(plan.usage) : undefined;
  }

  /** A chunk of the log as it arrives (any split, also inside a line or a character's bytes' string). */
  feed(chunk: string): void {
    const bytes = Buffer.byteLength(chunk);
    this.total += bytes;
    this.keep(chunk, bytes);
    let from = 0;
    for (let nl = chunk.indexOf("\n"); nl >= 0; nl = chunk.indexOf("\n", from)) {
      this.piece(chunk.slice(from, nl));
      this.endLine();
      from = nl + 1;
    }
    if (from < chunk.length) this.piece(chunk.slice(from));
  }

  end(): MeteredLog {
    if (this.partial.length > 0 || this.skipping) this.endLine();
    const text = this.tail
      .slice(this.tailStart)
      .map((c) => c.text)
      .join("");
    const r = this.usage?.result();
    const answer = this.limits.lastAnswer();
    const retries = this.limits.retries(this.plan.runSeconds, this.plan.lifetime);
    const cliError = oneLine(this.reported || this.stderr || this.supervisor);
    return {
      text,
      droppedBytes: this.total - this.tailBytes,
      facts: {
        sessionId: this.sessionId,
        cliError,
        ...(answer !== undefined ? { providerAnswer: answer } : {}),
        ...(retries !== undefined ? { providerRetries: retries } : {}),
        ...(r !== undefined ? { usage: r } : {}),
        pullRequestUrl: this.pullRequestUrl,
        ...(this.deliveryFailure !== undefined ? { deliveryFailure: this.deliveryFailure } : {}),
        totalBytes: this.total,
        unreadLines: this.unreadLines,
        started: this.started,
        ended: this.ended,
      },
    };
  }

  /** The output's source: whole chunks, dropped from the front once the rest holds keepBytes. */
  private keep(text: string, bytes: number): void {
    this.tail.push({ text, bytes });
    this.tailBytes += bytes;
    for (;;) {
      const first = this.tail[this.tailStart];
      if (first === undefined || this.tail.length - this.tailStart <= 1) break;
      if (this.tailBytes - first.bytes < this.plan.keepBytes) break;
      this.tailBytes -= first.bytes;
      this.tailStart += 1;
    }
    // Compacted now and then, not per line: no shift() per chunk.
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  private piece(text: string): void {
    if (this.skipping || text === "") return;
    this.partialBytes += text.length;
    if (this.partialBytes > MAX_LINE_BYTES) {
      this.partial = [];
      this.partialBytes = 0;
      this.skipping = true;
      return;
    }
    this.partial.push(text);
  }

  private endLine(): void {
    const line = this.partial.length === 1 ? (this.partial[0] as string) : this.partial.join("");
    this.partial = [];
    this.partialBytes = 0;
    if (this.skipping) {
      this.skipping = false;
      this.unreadLines += 1;
      return;
    }
    this.line(line);
  }

  private line(line: string): void {
    if (line.startsWith(AGENT_STDERR_PREFIX)) {
      if (line.length > AGENT_STDERR_PREFIX.length)
        this.stderr = line.slice(AGENT_STDERR_PREFIX.length, AGENT_STDERR_PREFIX.length + KEPT_TEXT_CHARS);
      return;
    }
    const event = parseJsonLine(line);
    if (event === undefined) return;
    this.event(event);
  }

  private event(e: JsonLine): void {
    if (e.kind === PROVIDER_LIMIT_KIND) {
      const limit = parseProviderLimitEvent(e);
      if (limit !== undefined) this.limits.add(limit);
      return;
    }
    if (e.kind === "lifecycle" && e.phase === "agent") {
      if (e.status === "started") this.started = true;
      else if (e.status === "succeeded" || e.status === "failed") this.ended = true;
    }
    if (e.kind === "delivery") {
      if (typeof e.url === "string" && e.url !== "") this.pullRequestUrl = e.url;
      this.deliveryFailure = e.status === "failed" ? oneLine(String(e.reason ?? "unknown")) : undefined;
    }
    const vendor = this.plan.vendor;
    const id = announcedSessionId(vendor, e);
    if (id !== undefined) this.sessionId = id;
    const message = cliErrorMessage(vendor, e);
    if (message !== undefined && message.trim() !== "") this.reported = message.slice(0, KEPT_TEXT_CHARS);
    else if (e.component === "supervisor" && e.level === "error" && typeof e.msg === "string" && e.msg)
      this.supervisor = e.msg.slice(0, KEPT_TEXT_CHARS);
    this.usage?.line(e);
  }
}

/** A whole log already in memory through the same meter (the core's fallback when no facts were streamed). */
export function meterText(text: string, plan: LogMeterPlan): MeteredLog {
  const m = new LogMeter(plan);
  m.feed(text);
  return m.end();
}
