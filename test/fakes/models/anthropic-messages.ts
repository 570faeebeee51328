/**
 * A local Anthropic Messages API (`POST /v1/messages`) for the real Claude Code CLI: give the CLI
 * `ANTHROPIC_BASE_URL=<origin>` and any `ANTHROPIC_API_KEY`.
 *
 * Faithful to the documented contract (Anthropic's Messages API documentation, the Messages streaming
 * reference): a streamed answer is `message_start`, `ping`, per block `content_block_start` /
 * `content_block_delta` (`text_delta`, `input_json_delta` for `tool_use`) / `content_block_stop`,
 * then `message_delta` (stop_reason, usage) and `message_stop`; a non-streaming request gets the
 * whole `Message`. Errors are `{"type":"error","error":{type,message},"request_id"}` with the
 * status's documented error type, `retry-after` on request, and a `request-id` header.
 *
 * Only `POST /v1/messages` consumes script steps (Claude Code 2.1.328 sends it as
 * `/v1/messages?beta=true`). `POST /v1/messages/count_tokens` answers an estimate, `GET /v1/models`
 * lists the models requested so far and `HEAD /api/hello` (the CLI's connectivity probe) answers
 * 200; everything else is journaled and answered 404 (so a test sees what else the CLI tried).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  cutConnection,
  type ModelApi,
  type ModelServer,
  type ModelStep,
  type ModelUsage,
  sse,
  startModelServer,
  startSse,
} from "./base.js";

/** The documented error type of each status (docs/batch-providers.md#what-each-api-refuses); others are `api_error`. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/** What the real API says for each error type when a test does not choose a message. */
const DEFAULT_MESSAGES: Readonly<Record<string, string>> = {
  authentication_error: "invalid x-api-key",
  rate_limit_error: "Number of request tokens has exceeded your per-minute rate limit",
  overloaded_error: "Overloaded",
  api_error: "Internal server error",
  invalid_request_error: "Invalid request",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "Not found",
  billing_error: "Your credit balance is too low to access the Anthropic API.",
  request_too_large: "Request exceeds the maximum allowed number of bytes.",
  timeout_error: "Request timed out",
};

export const DEFAULT_MODEL = "claude-sonnet-4-6";

/**
 * Ids shaped like the API's (`req_01…`, `msg_01…`, `toolu_01…`) whose tail holds letters only, one
 * per request and server process. opencode 1.18 retries a failed request whose error body contains
 * 429, 500, 502, 503, 504 or 524 anywhere (docs/agent-clis.md, "opencode"): a random tail such as
 * `req_01…5000…` once made a 401 a retried call, so a test's answer depended on the dice.
 */
const ID_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
let counter = 0;
function id(prefix: string): string {
  counter += 1;
  let tail = "";
  for (let n = counter; n > 0; n = Math.floor(n / ID_LETTERS.length)) {
    tail = ID_LETTERS[n % ID_LETTERS.length] + tail;
  }
  return `${prefix}_01${tail.padStart(12, "A")}`;
}

interface MessagesRequest {
  model?: string;
  stream?: boolean;
  messages?: unknown[];
  system?: unknown;
  tools?: unknown[];
}

function requestOf(body: unknown): MessagesRequest {
  return typeof body === "object" && body !== null ? (body as MessagesRequest) : {};
}

/** A deterministic rough token count (4 characters a token), for usage when a step names none. */
function estimateTokens(value: unknown): number {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? "");
  return Math.max(1, Math.ceil(text.length / 4));
}

type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

function blocksOf(step: ModelStep): Block[] {
  if ("toolCall" in step) {
    const blocks: Block[] = [];
    if (step.text !== undefined && step.text !== "") blocks.push({ type: "text", text: step.text });
    blocks.push({ type: "tool_use", id: id("toolu"), name: step.toolCall.name, input: step.toolCall.input });
    return blocks;
  }
  if ("text" in step && typeof step.text === "string") return [{ type: "text", text: step.text }];
  return [];
}

function usageOf(step: ModelStep, request: MessagesRequest, blocks: Block[]) {
  const given: ModelUsage = "usage" in step && step.usage ? step.usage : {};
  return {
    input_tokens: given.input ?? estimateTokens([request.system, request.messages]),
    cache_creation_input_tokens: given.cacheWrite ?? 0,
    cache_read_input_tokens: given.cacheRead ?? 0,
    output_tokens: given.output ?? estimateTokens(blocks),
  };
}

/** Splits a string into a few chunks, as the API streams text and tool input in pieces. */
function chunks(text: string, size = 16): string[] {
  if (text === "") return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function messageShell(msgId: string, model: string) {
  return {
    id: msgId,
    type: "message",
    role: "assistant",
    model,
    content: [] as unknown[],
    stop_reason: null,
    stop_sequence: null,
  };
}

function sendError(res: ServerResponse, step: Extract<ModelStep, { error: unknown }>): void {
  const { status } = step.error;
  const type =
    step.error.type ?? ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  const message = step.error.message ?? DEFAULT_MESSAGES[type] ?? "Error";
  const requestId = id("req");
  res.writeHead(status, {
    "content-type": "application/json",
    "request-id": requestId,
    ...(step.retryAfterSeconds !== undefined ? { "retry-after": String(step.retryAfterSeconds) } : {}),
  });
  res.end(JSON.stringify({ type: "error", error: { type, message }, request_id: requestId }));
}

function streamBlock(res: ServerResponse, index: number, block: Block): void {
  if (block.type === "text") {
    sse(
      res,
      { type: "content_block_start", index, content_block: { type: "text", text: "" } },
      "content_block_start",
    );
    for (const piece of chunks(block.text)) {
      sse(
        res,
        { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } },
        "content_block_delta",
      );
    }
  } else {
    sse(
      res,
      {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      },
      "content_block_start",
    );
    for (const piece of ["", ...chunks(JSON.stringify(block.input), 24)]) {
      sse(
        res,
        { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } },
        "content_block_delta",
      );
    }
  }
  sse(res, { type: "content_block_stop", index }, "content_block_stop");
}

function respondMessages(step: ModelStep, body: unknown, res: ServerResponse): void {
  if ("error" in step) {
    sendError(res, step);
    return;
  }
  const request = requestOf(body);
  const model = request.model ?? DEFAULT_MODEL;
  const msgId = id("msg");
  const requestId = id("req");
  if ("stall" in step) {
    if (request.stream) startSse(res, { "request-id": requestId });
    else {
      res.writeHead(200, { "content-type": "application/json", "request-id": requestId });
      res.flushHeaders();
    }
    return;
  }
  const blocks =
    "cut" in step ? (step.text ? [{ type: "text" as const, text: step.text }] : []) : blocksOf(step);
  const usage = usageOf(step, request, blocks);
  const stopReason = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  if (!request.stream) {
    if ("cut" in step) {
      res.writeHead(200, { "content-type": "application/json", "request-id": requestId });
      res.write('{"id":"');
      cutConnection(res);
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "request-id": requestId });
    res.end(
      JSON.stringify({ ...messageShell(msgId, model), content: blocks, stop_reason: stopReason, usage }),
    );
    return;
  }
  startSse(res, { "request-id": requestId });
  sse(
    res,
    {
      type: "message_start",
      message: {
        ...messageShell(msgId, model),
        usage: { ...usage, output_tokens: 1 },
      },
    },
    "message_start",
  );
  sse(res, { type: "ping" }, "ping");
  if ("cut" in step) {
    if (blocks[0]?.type === "text") {
      sse(
        res,
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        "content_block_start",
      );
      sse(
        res,
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: blocks[0].text } },
        "content_block_delta",
      );
    }
    // Let the written events reach the client before the connection drops.
    setTimeout(() => cutConnection(res), 50);
    return;
  }
  for (const [index, block] of blocks.entries()) streamBlock(res, index, block);
  sse(
    res,
    {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    },
    "message_delta",
  );
  sse(res, { type: "message_stop" }, "message_stop");
  res.end();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "request-id": id("req") });
  res.end(JSON.stringify(body));
}

export interface AnthropicMessagesServer extends ModelServer {
  /** The tool definitions the CLI sent on its last model call (name → input_schema). */
  lastTools(): Map<string, unknown>;
}

export async function startAnthropicMessages(host?: string): Promise<AnthropicMessagesServer> {
  const models = new Set<string>([DEFAULT_MODEL]);
  let tools = new Map<string, unknown>();
  const api: ModelApi = {
    isModelCall: (method, path) => method === "POST" && path === "/v1/messages",
    respond(step, req, res) {
      const request = requestOf(req.body);
      if (request.model) models.add(request.model);
      if (Array.isArray(request.tools)) {
        tools = new Map(
          request.tools
            .filter(
              (t): t is { name: string; input_schema?: unknown } =>
                typeof (t as { name?: unknown })?.name === "string",
            )
            .map((t) => [t.name, t.input_schema]),
        );
      }
      respondMessages(step, req.body, res);
    },
    other(req: IncomingMessage, path: string, res: ServerResponse, body: unknown): boolean {
      if (req.method === "POST" && path === "/v1/messages/count_tokens") {
        const request = requestOf(body);
        json(res, 200, { input_tokens: estimateTokens([request.system, request.messages, request.tools]) });
        return true;
      }
      if (req.method === "GET" && path === "/v1/models") {
        const data = [...models].map((m) => ({
          type: "model",
          id: m,
          display_name: m,
          created_at: "2026-01-01T00:00:00Z",
        }));
        json(res, 200, {
          data,
          has_more: false,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
        });
        return true;
      }
      if ((req.method === "HEAD" || req.method === "GET") && path === "/api/hello") {
        // The CLI's connectivity probe (sent unless CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set).
        res.writeHead(200, { "content-type": "application/json" });
        res.end(req.method === "HEAD" ? undefined : "{}");
        return true;
      }
      return false;
    },
  };
  const server = await startModelServer(api, host);
  return { ...server, lastTools: () => tools };
}

/** The conversation a model call carried: its `messages` array (user/assistant turns, tool results). */
export function messagesOf(body: unknown): Array<{ role: string; content: unknown }> {
  const request = requestOf(body);
  return Array.isArray(request.messages)
    ? (request.messages as Array<{ role: string; content: unknown }>)
    : [];
}

/**
 * Every text the conversation carried (user prompts, assistant answers, tool results), in order.
 * Claude Code 2.1.328 also sends a `system` role message (its environment notes) among them: left out.
 */
export function textsOf(body: unknown): string[] {
  const out: string[] = [];
  const visit = (content: unknown): void => {
    if (typeof content === "string") out.push(content);
    else if (Array.isArray(content)) for (const c of content) visit(c);
    else if (typeof content === "object" && content !== null) {
      const c = content as { type?: string; text?: unknown; content?: unknown };
      if (typeof c.text === "string") out.push(c.text);
      if (c.type === "tool_result") visit(c.content);
    }
  };
  for (const m of messagesOf(body)) if (m.role === "user" || m.role === "assistant") visit(m.content);
  return out;
}
