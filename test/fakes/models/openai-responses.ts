/**
 * A local OpenAI Responses API server for the real codex CLI (docs/agent-clis.md): `POST
 * /v1/responses` answered with the documented server-sent events (OpenAI's Responses API reference,
 * `ResponseStreamEvent`): `response.created`, `response.in_progress`, per output item
 * `response.output_item.added` … `response.output_item.done` (text through
 * `response.content_part.*` and `response.output_text.*`, function calls through
 * `response.function_call_arguments.*`, freeform tools through `response.custom_tool_call_input.*`),
 * then `response.completed` with usage or `response.failed`. HTTP errors carry OpenAI's body
 * `{"error":{"message","type","param","code"}}`.
 *
 * Give the CLI `url` (…/v1) as its base URL. A WebSocket upgrade of /v1/responses is answered 426
 * (the CLI then falls back to HTTP streaming at once); `GET /v1/models` lists `models`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  cutConnection,
  type JournalEntry,
  type ModelApi,
  type ModelServer,
  type ModelStep,
  type ModelUsage,
  sse,
  startModelServer,
  startSse,
} from "./base.js";

/**
 * The steps every model fake understands, plus a Responses-only one: the stream starts and ends
 * in `response.failed` with this error (HTTP 200; the failure is in the stream).
 */
export type OpenAiStep = ModelStep | { failed: { code: string; message: string } };

export interface OpenAiResponsesServer extends Omit<ModelServer, "script" | "fallback"> {
  /** `<origin>/v1`: the base URL a client appends `/responses` to. */
  url: string;
  script(steps: OpenAiStep[]): void;
  fallback(step: OpenAiStep): void;
}

export interface OpenAiResponsesOptions {
  /** Model ids `GET /v1/models` lists (default: ["gpt-5-codex"]). */
  models?: string[];
  /** Where it listens (default 127.0.0.1; run pods on the real node reach podReachableHost()). */
  host?: string;
}

/** OpenAI's own error wording and type per status (what api.openai.com answers). */
const ERRORS: Readonly<Record<number, { type: string; code: string | null; message: string }>> = {
  400: { type: "invalid_request_error", code: null, message: "Invalid request." },
  401: {
    type: "invalid_request_error",
    code: "invalid_api_key",
    message:
      "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
  },
  403: {
    type: "invalid_request_error",
    code: "unsupported_country_region_territory",
    message: "Country, region, or territory not supported",
  },
  429: {
    type: "requests",
    code: "rate_limit_exceeded",
    message:
      "Rate limit reached for gpt-5.5 in organization org-test on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
  },
  500: {
    type: "server_error",
    code: null,
    message: "The server had an error while processing your request. Sorry about that!",
  },
  503: {
    type: "server_error",
    code: null,
    message: "The engine is currently overloaded, please try again later.",
  },
};

/** The `input` items a Responses request carried (its conversation history), [] when none. */
export function inputItems(entry: Pick<JournalEntry, "body">): Record<string, unknown>[] {
  const input = (entry.body as { input?: unknown } | undefined)?.input;
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  return Array.isArray(input) ? (input as Record<string, unknown>[]) : [];
}

/** The text of every message item of `role` in a request's input, in order. */
export function messageTexts(
  entry: Pick<JournalEntry, "body">,
  role: "user" | "assistant" | "developer",
): string[] {
  const texts: string[] = [];
  for (const item of inputItems(entry)) {
    if (item.role !== role) continue;
    const content = item.content;
    if (typeof content === "string") texts.push(content);
    else if (Array.isArray(content))
      for (const part of content as { text?: unknown }[])
        if (typeof part.text === "string") texts.push(part.text);
  }
  return texts;
}

/**
 * The tools a request offered, with their kind (`function`, `custom`, …): the top-level `tools`
 * and those codex sends as `additional_tools` input items, namespaces flattened.
 */
export function offeredTools(entry: Pick<JournalEntry, "body">): { name: string; type: string }[] {
  const out: { name: string; type: string }[] = [];
  const walk = (tools: unknown): void => {
    if (!Array.isArray(tools)) return;
    for (const t of tools as { name?: unknown; type?: unknown; tools?: unknown }[]) {
      if (t.type === "namespace") walk(t.tools);
      else out.push({ name: typeof t.name === "string" ? t.name : String(t.type), type: String(t.type) });
    }
  };
  walk((entry.body as { tools?: unknown } | undefined)?.tools);
  for (const item of inputItems(entry)) if (item.type === "additional_tools") walk(item.tools);
  return out;
}

let counter = 0;
const newId = (prefix: string): string => `${prefix}_${Date.now().toString(36)}${(++counter).toString(36)}`;

function usageOf(u: ModelUsage | undefined): Record<string, unknown> {
  const input = u?.input ?? 10;
  const output = u?.output ?? 5;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u?.cacheRead ?? 0, cache_write_tokens: u?.cacheWrite ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

/** The error body of an HTTP error step. */
export function errorBody(status: number, message?: string, type?: string): Record<string, unknown> {
  const known = ERRORS[status] ?? ERRORS[status >= 500 ? 500 : 400];
  return {
    error: {
      message: message ?? known?.message ?? `HTTP ${status}`,
      type: type ?? known?.type ?? "invalid_request_error",
      param: null,
      // A type of its own (e.g. insufficient_quota) is also the code, as OpenAI answers it.
      code: type !== undefined && type !== known?.type ? type : (known?.code ?? null),
    },
  };
}

/** One streamed response: numbered events and the response object they describe. */
class ResponseStream {
  private seq = 0;
  readonly id = newId("resp");
  readonly output: Record<string, unknown>[] = [];
  constructor(
    private readonly res: ServerResponse,
    private readonly model: string,
  ) {}

  send(type: string, fields: Record<string, unknown>): void {
    sse(this.res, { type, ...fields, sequence_number: this.seq++ }, type);
  }

  response(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      id: this.id,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status,
      completed_at: status === "completed" ? Math.floor(Date.now() / 1000) : null,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      model: this.model,
      output: status === "in_progress" ? [] : this.output,
      parallel_tool_calls: true,
      previous_response_id: null,
      store: false,
      text: { format: { type: "text" } },
      tool_choice: "auto",
      tools: [],
      usage: null,
      metadata: {},
      ...extra,
    };
  }

  start(): void {
    this.send("response.created", { response: this.response("in_progress") });
    this.send("response.in_progress", { response: this.response("in_progress") });
  }

  /** A message item streamed as one delta per word. */
  message(text: string): void {
    const index = this.output.length;
    const id = newId("msg");
    const base = { id, type: "message", role: "assistant" };
    this.send("response.output_item.added", {
      output_index: index,
      item: { ...base, status: "in_progress", content: [] },
    });
    const empty = { type: "output_text", text: "", annotations: [], logprobs: [] };
    this.send("response.content_part.added", {
      item_id: id,
      output_index: index,
      content_index: 0,
      part: empty,
    });
    for (const delta of text.match(/\S+\s*|\s+/g) ?? [])
      this.send("response.output_text.delta", {
        item_id: id,
        output_index: index,
        content_index: 0,
        delta,
        logprobs: [],
      });
    this.send("response.output_text.done", {
      item_id: id,
      output_index: index,
      content_index: 0,
      text,
      logprobs: [],
    });
    const part = { ...empty, text };
    this.send("response.content_part.done", { item_id: id, output_index: index, content_index: 0, part });
    const item = { ...base, status: "completed", content: [part] };
    this.send("response.output_item.done", { output_index: index, item });
    this.output.push(item);
  }

  /** A `function_call` item (arguments streamed in two halves). */
  functionCall(name: string, args: string): void {
    const index = this.output.length;
    const id = newId("fc");
    const base = { id, type: "function_call", call_id: newId("call"), name };
    this.send("response.output_item.added", {
      output_index: index,
      item: { ...base, arguments: "", status: "in_progress" },
    });
    const half = Math.ceil(args.length / 2);
    for (const delta of [args.slice(0, half), args.slice(half)])
      if (delta !== "")
        this.send("response.function_call_arguments.delta", { item_id: id, output_index: index, delta });
    this.send("response.function_call_arguments.done", {
      item_id: id,
      output_index: index,
      name,
      arguments: args,
    });
    const item = { ...base, arguments: args, status: "completed" };
    this.send("response.output_item.done", { output_index: index, item });
    this.output.push(item);
  }

  /** A `custom_tool_call` item: a freeform tool's raw text input. */
  customToolCall(name: string, input: string): void {
    const index = this.output.length;
    const id = newId("ctc");
    const base = { id, type: "custom_tool_call", call_id: newId("call"), name };
    this.send("response.output_item.added", {
      output_index: index,
      item: { ...base, input: "", status: "in_progress" },
    });
    this.send("response.custom_tool_call_input.delta", { item_id: id, output_index: index, delta: input });
    this.send("response.custom_tool_call_input.done", { item_id: id, output_index: index, input });
    const item = { ...base, input, status: "completed" };
    this.send("response.output_item.done", { output_index: index, item });
    this.output.push(item);
  }

  completed(usage: ModelUsage | undefined): void {
    this.send("response.completed", { response: this.response("completed", { usage: usageOf(usage) }) });
  }

  failed(error: { code: string; message: string }): void {
    this.send("response.failed", { response: this.response("failed", { error }) });
  }
}

/**
 * A tool call as the request offered the tool: a function tool gets `input` as JSON arguments; a
 * freeform (`custom`) tool such as codex's `apply_patch` takes its raw text from `input.input`.
 * Calling a tool the request did not offer is a test bug, reported as such.
 */
function callTool(
  stream: ResponseStream,
  body: unknown,
  call: { name: string; input: Record<string, unknown> },
): void {
  const tools = offeredTools({ body });
  const tool = tools.find((t) => t.name === call.name);
  if (tool === undefined)
    throw new Error(`tool ${call.name} was not offered (offered: ${tools.map((t) => t.name).join(", ")})`);
  if (tool.type === "custom") {
    if (typeof call.input.input !== "string")
      throw new Error(`${call.name} is a freeform tool: give its text as input.input`);
    stream.customToolCall(call.name, call.input.input);
  } else stream.functionCall(call.name, JSON.stringify(call.input));
}

const respond = async (
  step: OpenAiStep,
  req: { body: unknown; raw: IncomingMessage },
  res: ServerResponse,
): Promise<void> => {
  if ("error" in step) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-request-id": newId("req"),
    };
    if (step.retryAfterSeconds !== undefined) headers["retry-after"] = String(step.retryAfterSeconds);
    res.writeHead(step.error.status, headers);
    res.end(JSON.stringify(errorBody(step.error.status, step.error.message, step.error.type)));
    return;
  }
  const model = String((req.body as { model?: unknown } | undefined)?.model ?? "gpt-5-codex");
  startSse(res, { "x-request-id": newId("req") });
  if ("stall" in step) return; // headers sent; the socket stays open until the server closes
  const stream = new ResponseStream(res, model);
  stream.start();
  if ("cut" in step) {
    if (step.text !== undefined) stream.message(step.text);
    await new Promise((resolve) => setTimeout(resolve, 20)); // let the events reach the client first
    cutConnection(res);
    return;
  }
  if ("failed" in step) {
    stream.failed(step.failed);
    res.end();
    return;
  }
  if ("toolCall" in step) {
    if (step.text !== undefined) stream.message(step.text);
    callTool(stream, req.body, step.toolCall);
    stream.completed(step.usage);
    res.end();
    return;
  }
  stream.message(step.text);
  stream.completed(step.usage);
  res.end();
};

export async function startOpenAiResponsesServer(
  options: OpenAiResponsesOptions = {},
): Promise<OpenAiResponsesServer> {
  const models = options.models ?? ["gpt-5-codex"];
  const api: ModelApi = {
    isModelCall: (method, path) => method === "POST" && path === "/v1/responses",
    respond: (step, req, res) => respond(step, req, res),
    other(req, path, res) {
      if (path === "/v1/responses" && req.headers.upgrade !== undefined) {
        // No WebSocket transport here: 426 tells the client to use HTTP streaming instead.
        res.writeHead(426, { "content-type": "application/json" });
        res.end(JSON.stringify(errorBody(426, "WebSocket transport is not available; use HTTP streaming.")));
        return true;
      }
      if (req.method === "GET" && path === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            object: "list",
            data: models.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "openai" })),
          }),
        );
        return true;
      }
      return false;
    },
  };
  const server = await startModelServer(api, options.host);
  return {
    ...server,
    url: `${server.origin}/v1`,
    // The base server keeps steps opaque and hands each back to `respond` above, which knows `failed`.
    script: (steps) => server.script(steps as ModelStep[]),
    fallback: (step) => server.fallback(step as ModelStep),
  };
}
