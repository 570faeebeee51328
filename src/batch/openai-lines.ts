/**
 * Turns an OpenAI batch's end state (and its output/error file line) into the lines
 * `codex exec --json` prints for a single-turn, no-tool run (docs/batch-providers.md#results--lines,
 * docs/agent-clis.md#codex), plus the run's outcome. Pure: no I/O, no clock.
 */
import type { components } from "../../generated/providers/openai.js";
import type { BatchPollResult } from "./provider.js";
import { count, isRecordLike, optStr, record } from "./read.js";
import { incompleteReason } from "./truncation.js";

type Batch = components["schemas"]["Batch"];
type Ended = Extract<BatchPollResult, { state: "ended" }>;

const V = "openai";

export const NO_RESULT = "batch completed without a result";

export interface CodexLineContext {
  agentUid: string;
}

/** Batches that can no longer change: their files (if any) are final. */
export const SETTLED_STATUSES = new Set(["completed", "failed", "expired", "cancelled"]);

/** For a batch that ended failed, expired or cancelled: the seed's reason with its first error. */
export function batchEndReason(batch: Batch): string {
  const first = Array.isArray(batch.errors?.data) ? batch.errors.data[0] : undefined;
  const message = optStr(first?.message);
  return `batch ${batch.status}${message ? `: ${message}` : ""}`;
}

/** Picks this Agent's line out of an output or error file (order is not guaranteed). */
export function findOutputLine(lines: unknown[], agentUid: string): Record<string, unknown> | undefined {
  for (const l of lines) {
    const r = record(V, l, "batch output line");
    if (r.custom_id === agentUid) return r;
  }
  return undefined;
}

/** The outcome of one BatchRequestOutput line (from the output file or the error file). */
export function translateOpenAILine(line: Record<string, unknown>, ctx: CodexLineContext): Ended {
  if (isRecordLike(line.error)) {
    return codexFailure(optStr(line.error.message) ?? optStr(line.error.code) ?? "request failed", ctx);
  }
  const response = record(V, line.response, "batch output line response");
  const status = count(response.status_code);
  const body = isRecordLike(response.body) ? response.body : {};
  if (status < 200 || status >= 300) {
    const error = isRecordLike(body.error) ? optStr(body.error.message) : undefined;
    return codexFailure(error ?? `request failed with HTTP ${status}`, ctx);
  }
  if (body.status === "incomplete") {
    const reason = isRecordLike(body.incomplete_details) ? optStr(body.incomplete_details.reason) : undefined;
    return codexFailure(incompleteReason(reason ?? "unknown"), ctx);
  }
  if (body.status === "failed") {
    const error = isRecordLike(body.error) ? optStr(body.error.message) : undefined;
    return codexFailure(error ?? "response failed", ctx);
  }
  // Reasoning items are left out, as the CLI leaves them out of its message.
  const texts: string[] = [];
  const refusals: string[] = [];
  for (const item of Array.isArray(body.output) ? body.output : []) {
    if (!isRecordLike(item) || item.type !== "message" || !Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (!isRecordLike(part)) continue;
      if (part.type === "output_text" && typeof part.text === "string") texts.push(part.text);
      if (part.type === "refusal" && typeof part.refusal === "string") refusals.push(part.refusal);
    }
  }
  if (texts.length === 0 && refusals.length > 0) return codexFailure(refusals.join(""), ctx);
  const usage = isRecordLike(body.usage) ? body.usage : {};
  const inputDetails = isRecordLike(usage.input_tokens_details) ? usage.input_tokens_details : {};
  const outputDetails = isRecordLike(usage.output_tokens_details) ? usage.output_tokens_details : {};
  return {
    state: "ended",
    outcome: "succeeded",
    lines: [
      ...openingLines(ctx),
      JSON.stringify({
        type: "item.completed",
        item: { id: "item_0", type: "agent_message", text: texts.join("") },
      }),
      JSON.stringify({
        type: "turn.completed",
        usage: {
          input_tokens: count(usage.input_tokens),
          cached_input_tokens: count(inputDetails.cached_tokens),
          output_tokens: count(usage.output_tokens),
          reasoning_output_tokens: count(outputDetails.reasoning_tokens),
        },
      }),
    ],
  };
}

function openingLines(ctx: CodexLineContext): string[] {
  return [
    JSON.stringify({ type: "thread.started", thread_id: ctx.agentUid }),
    JSON.stringify({ type: "turn.started" }),
  ];
}

/** As the CLI reports an API error: an error line, then turn.failed with the same message. */
export function codexFailure(reason: string, ctx: CodexLineContext): Ended {
  return {
    state: "ended",
    outcome: "failed",
    lines: [
      ...openingLines(ctx),
      JSON.stringify({ type: "error", message: reason }),
      JSON.stringify({ type: "turn.failed", error: { message: reason } }),
    ],
    failureReason: reason,
  };
}
