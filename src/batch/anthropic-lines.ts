/**
 * Turns one Anthropic batch result line into the lines `claude -p --output-format stream-json
 * --verbose` prints for a single-turn, no-tool run (docs/batch-providers.md#results--lines,
 * docs/agent-clis.md#claude), plus the run's outcome. Pure: no I/O, no clock.
 */
import type { components } from "../../generated/providers/anthropic.js";
import { batchCostUsd } from "./pricing.js";
import type { BatchPollResult } from "./provider.js";
import { count, optStr, record, str, unreadable } from "./read.js";
import { incompleteReason } from "./truncation.js";

type Message = components["schemas"]["Message"];
type Usage = components["schemas"]["Usage"];

const V = "anthropic";

export interface ClaudeLineContext {
  agentUid: string;
  model: string;
}

/** The failureReason texts the seed fixes for requests that did not run. */
export const REQUEST_EXPIRED = "batch request expired";
export const REQUEST_CANCELED = "batch request canceled";
export const NO_RESULT = "batch ended without a result";

/** stop_reason values that mean the answer was cut off before the model finished it. */
const TRUNCATED = new Set(["max_tokens", "model_context_window_exceeded"]);

export function claudeInitLine(ctx: ClaudeLineContext): string {
  return JSON.stringify({
    type: "system",
    subtype: "init",
    session_id: ctx.agentUid,
    tools: [],
    mcp_servers: [],
    model: ctx.model,
    permissionMode: "default",
    slash_commands: [],
    apiKeySource: "ANTHROPIC_API_KEY",
    output_style: "default",
  });
}

/** Picks this Agent's line out of the results JSONL (order is not guaranteed). */
export function findResultLine(lines: unknown[], agentUid: string): Record<string, unknown> | undefined {
  for (const l of lines) {
    const r = record(V, l, "results line");
    if (r.custom_id === agentUid) return r;
  }
  return undefined;
}

export function translateAnthropicResult(
  line: Record<string, unknown> | undefined,
  ctx: ClaudeLineContext,
): Extract<BatchPollResult, { state: "ended" }> {
  if (line === undefined) return claudeFailure(NO_RESULT, ctx);
  const result = record(V, line.result, "results line result");
  switch (result.type) {
    case "succeeded": {
      const message = readMessage(result.message);
      if (typeof message.stop_reason === "string" && TRUNCATED.has(message.stop_reason)) {
        return claudeFailure(incompleteReason(message.stop_reason), ctx, message);
      }
      return claudeSuccess(message, ctx);
    }
    case "errored": {
      const envelope = record(V, result.error, "errored result error");
      const error = record(V, envelope.error, "errored result error.error");
      const reason = `${str(V, error.type, "error.type")}: ${str(V, error.message, "error.message")}`;
      return claudeFailure(reason, ctx);
    }
    case "expired":
      return claudeFailure(REQUEST_EXPIRED, ctx);
    case "canceled":
      return claudeFailure(REQUEST_CANCELED, ctx);
    default:
      throw unreadable(
        V,
        `result.type ${JSON.stringify(result.type)} is not one of succeeded, errored, expired, canceled`,
      );
  }
}

function readMessage(v: unknown): Message {
  const m = record(V, v, "succeeded result message");
  if (!Array.isArray(m.content)) throw unreadable(V, "message.content is not an array");
  record(V, m.usage, "message.usage");
  return m as unknown as Message;
}

function claudeSuccess(
  message: Message,
  ctx: ClaudeLineContext,
): Extract<BatchPollResult, { state: "ended" }> {
  // Thinking and redacted_thinking blocks are dropped: the CLI shows only the answer text.
  const textBlocks = message.content
    .filter((b): b is components["schemas"]["TextBlock"] => b.type === "text" && typeof b.text === "string")
    .map((b) => ({ type: "text", text: b.text }));
  const text = textBlocks.map((b) => b.text).join("");
  const usage = resultUsage(message.usage);
  const cost = billedCost(message, ctx);
  const responseModel = optStr(message.model) ?? ctx.model;
  const assistant = {
    type: "assistant",
    message: {
      id: message.id,
      type: "message",
      role: "assistant",
      model: responseModel,
      content: textBlocks,
      stop_reason: message.stop_reason ?? null,
      stop_sequence: message.stop_sequence ?? null,
      usage: message.usage,
    },
    parent_tool_use_id: null,
    session_id: ctx.agentUid,
  };
  const result = {
    type: "result",
    subtype: "success",
    is_error: false,
    duration_ms: 0,
    duration_api_ms: 0,
    num_turns: 1,
    result: text,
    stop_reason: message.stop_reason ?? null,
    session_id: ctx.agentUid,
    total_cost_usd: cost,
    usage,
    modelUsage: {
      [responseModel]: {
        inputTokens: count(message.usage.input_tokens),
        outputTokens: count(message.usage.output_tokens),
        cacheReadInputTokens: count(message.usage.cache_read_input_tokens),
        cacheCreationInputTokens: count(message.usage.cache_creation_input_tokens),
        webSearchRequests: count(message.usage.server_tool_use?.web_search_requests),
        costUSD: cost,
      },
    },
    permission_denials: [],
    terminal_reason: "completed",
  };
  return {
    state: "ended",
    outcome: "succeeded",
    lines: [claudeInitLine(ctx), JSON.stringify(assistant), JSON.stringify(result)],
  };
}

function billedCost(message: Message, ctx: ClaudeLineContext): number {
  return batchCostUsd(ctx.model, {
    input_tokens: count(message.usage.input_tokens),
    output_tokens: count(message.usage.output_tokens),
    cache_creation_input_tokens: message.usage.cache_creation_input_tokens,
    cache_read_input_tokens: message.usage.cache_read_input_tokens,
  });
}

/** The result line's usage in the CLI's key order; cache fields only when the provider reports them. */
function resultUsage(u: Usage): Record<string, unknown> {
  const out: Record<string, unknown> = { input_tokens: count(u.input_tokens) };
  if (u.cache_creation_input_tokens != null) out.cache_creation_input_tokens = u.cache_creation_input_tokens;
  if (u.cache_read_input_tokens != null) out.cache_read_input_tokens = u.cache_read_input_tokens;
  out.output_tokens = count(u.output_tokens);
  if (u.server_tool_use != null) out.server_tool_use = u.server_tool_use;
  if (u.service_tier != null) out.service_tier = u.service_tier;
  if (u.cache_creation != null) out.cache_creation = u.cache_creation;
  return out;
}

/**
 * As the CLI reports a failed API call: subtype success, is_error true, the error text as result.
 * With `billed` (a truncated answer), usage and cost are the message's: those tokens were paid for.
 */
export function claudeFailure(
  reason: string,
  ctx: ClaudeLineContext,
  billed?: Message,
): Extract<BatchPollResult, { state: "ended" }> {
  const result = {
    type: "result",
    subtype: "success",
    is_error: true,
    duration_ms: 0,
    duration_api_ms: 0,
    num_turns: 1,
    result: reason,
    stop_reason: billed?.stop_reason ?? null,
    session_id: ctx.agentUid,
    total_cost_usd: 0,
    usage: billed ? resultUsage(billed.usage) : { input_tokens: 0, output_tokens: 0 },
    modelUsage: {},
    permission_denials: [],
  };
  if (billed) result.total_cost_usd = billedCost(billed, ctx);
  return {
    state: "ended",
    outcome: "failed",
    lines: [claudeInitLine(ctx), JSON.stringify(result)],
    failureReason: reason,
  };
}
