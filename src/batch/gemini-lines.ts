/**
 * Turns a finished Gemini batch operation into the lines `gemini -p --output-format stream-json`
 * prints for a single-turn, no-tool run (docs/batch-providers.md#results--lines, docs/agent-clis.md#gemini),
 * plus the run's outcome. Pure: no I/O, no clock.
 */
import type { components } from "../../generated/providers/gemini.js";
import type { BatchPollResult } from "./provider.js";
import { count, isRecordLike, optStr, record, unreadable } from "./read.js";
import { incompleteReason } from "./truncation.js";

type GenerateContentResponse = components["schemas"]["GenerateContentResponse"];
type Ended = Extract<BatchPollResult, { state: "ended" }>;

const V = "gemini";

export interface GeminiLineContext {
  agentUid: string;
  model: string;
}

export const NO_RESULT = "batch completed without a result";

/** The batch's state without its BATCH_STATE_ / JOB_STATE_ prefix (both spellings occur). */
export function geminiBatchState(operation: Record<string, unknown>): string {
  const metadata = isRecordLike(operation.metadata) ? operation.metadata : {};
  const raw = optStr(metadata.state);
  if (raw === undefined) {
    if (operation.done === true) return operation.error !== undefined ? "FAILED" : "SUCCEEDED";
    return "PENDING";
  }
  return raw.replace(/^(BATCH|JOB)_STATE_/, "");
}

const TERMINAL = new Set(["SUCCEEDED", "PARTIALLY_SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"]);

export function isGeminiTerminal(state: string): boolean {
  return TERMINAL.has(state);
}

/** The operation's outcome once its state is terminal. */
export function translateGeminiOperation(operation: Record<string, unknown>, ctx: GeminiLineContext): Ended {
  const state = geminiBatchState(operation);
  if (state === "FAILED" || state === "CANCELLED" || state === "EXPIRED") {
    const error = isRecordLike(operation.error) ? optStr(operation.error.message) : undefined;
    const reason = `batch ${state.toLowerCase()}${error ? `: ${error}` : ""}`;
    return geminiFailure(reason, ctx);
  }
  const inlined = inlinedResponses(operation);
  const mine =
    inlined.find((r) => isRecordLike(r.metadata) && r.metadata.key === ctx.agentUid) ??
    // Metadata is sometimes not echoed back; with one request per batch the first one is ours.
    inlined[0];
  if (mine === undefined) return geminiFailure(NO_RESULT, ctx);
  if (mine.error !== undefined) {
    const error = record(V, mine.error, "inlined response error");
    const message = optStr(error.message) ?? `request failed with code ${String(error.code)}`;
    return geminiFailure(message, ctx);
  }
  const response = record(V, mine.response, "inlined response") as GenerateContentResponse;
  const candidates = Array.isArray(response.candidates) ? response.candidates : [];
  const first = candidates[0];
  if (first === undefined) {
    const reason = response.promptFeedback?.blockReason ?? "BLOCKED_REASON_UNSPECIFIED";
    return geminiFailure(`response blocked: ${reason}`, ctx, response);
  }
  // A cut-off answer fails the run, as it does for the other vendors (docs/decisions.md D-108).
  if (first.finishReason === "MAX_TOKENS")
    return geminiFailure(incompleteReason("MAX_TOKENS"), ctx, response);
  const parts = Array.isArray(first.content?.parts) ? first.content.parts : [];
  const text = parts
    .filter((p) => p.thought !== true && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
  const lines = [initLine(ctx)];
  lines.push(JSON.stringify({ type: "message", role: "assistant", content: text, delta: true }));
  lines.push(JSON.stringify({ type: "result", status: "success", stats: stats(response, ctx) }));
  return { state: "ended", outcome: "succeeded", lines };
}

function inlinedResponses(operation: Record<string, unknown>): Record<string, unknown>[] {
  const fromMetadata = isRecordLike(operation.metadata) ? operation.metadata.output : undefined;
  for (const output of [fromMetadata, operation.response]) {
    if (!isRecordLike(output) || !isRecordLike(output.inlinedResponses)) continue;
    const list = output.inlinedResponses.inlinedResponses;
    if (!Array.isArray(list)) throw unreadable(V, "inlinedResponses.inlinedResponses is not an array");
    return list.map((r, i) => record(V, r, `inlined response ${i}`));
  }
  return [];
}

function initLine(ctx: GeminiLineContext): string {
  return JSON.stringify({ type: "init", session_id: ctx.agentUid, model: ctx.model });
}

function stats(response: GenerateContentResponse | undefined, ctx: GeminiLineContext) {
  if (response === undefined) {
    return {
      total_tokens: 0,
      input_tokens: 0,
      output_tokens: 0,
      cached: 0,
      input: 0,
      duration_ms: 0,
      tool_calls: 0,
      models: {},
    };
  }
  const u = response.usageMetadata ?? {};
  const prompt = count(u.promptTokenCount);
  const cached = count(u.cachedContentTokenCount);
  const tokens = {
    total_tokens: count(u.totalTokenCount),
    input_tokens: prompt,
    output_tokens: count(u.candidatesTokenCount),
    cached,
    input: Math.max(0, prompt - cached),
  };
  return {
    ...tokens,
    duration_ms: 0,
    tool_calls: 0,
    models: { [optStr(response.modelVersion) || ctx.model]: tokens },
  };
}

/** As the CLI reports an API error: init, then a result with status error and error.type BatchError. */
export function geminiFailure(
  reason: string,
  ctx: GeminiLineContext,
  response?: GenerateContentResponse,
): Ended {
  const result = {
    type: "result",
    status: "error",
    error: { type: "BatchError", message: reason },
    stats: stats(response, ctx),
  };
  return {
    state: "ended",
    outcome: "failed",
    lines: [initLine(ctx), JSON.stringify(result)],
    failureReason: reason,
  };
}
