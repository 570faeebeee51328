/**
 * A fake Anthropic Message Batches API (docs/batch-providers.md): x-api-key and
 * anthropic-version checks, the documented error envelope, in_progress → (canceling →) ended
 * on a virtual clock, JSONL results at results_url, delete only once ended.
 */
import {
  FakeClock,
  type FakeRequest,
  type FakeResponse,
  type FaultRule,
  idMaker,
  type RecordedRequest,
  startFakeServer,
} from "./base.js";

export type AnthropicOutcome =
  | {
      type: "succeeded";
      /** Answer text (default "ok"). */
      text?: string;
      /** A thinking block before the answer (default "Considering the request."); null for none. */
      thinking?: string | null;
      /** Fields merged over the default Message (content, usage, model, stop_reason…). */
      message?: Record<string, unknown>;
    }
  | { type: "errored"; error: { type: string; message: string } }
  | { type: "expired" }
  | { type: "canceled" };

export interface AnthropicScript {
  outcome: AnthropicOutcome;
  /** Virtual ms from creation to ended (default: the server's processingMs; expired: 24 h). */
  processingMs?: number;
}

export interface FakeAnthropicBatch {
  id: string;
  status: "in_progress" | "canceling" | "ended";
  createdAt: number;
  endsAt: number;
  endedAt?: number;
  cancelInitiatedAt?: number;
  /** The requests array of the create body, as sent. */
  requests: { custom_id: string; params: Record<string, unknown> }[];
  outcome: AnthropicOutcome;
  deleted: boolean;
}

export interface FakeAnthropicOptions {
  apiKey?: string;
  /**
   * Model id → maximum max_tokens. Any other model comes back errored with not_found_error, as
   * the real API answers it (asynchronously, in a batch). Default: ANTHROPIC_MODELS.
   */
  models?: Readonly<Record<string, number>>;
  /** Default virtual ms from creation to ended (60 s). */
  processingMs?: number;
  /** Virtual ms a canceling batch takes to end (30 s). */
  cancelMs?: number;
  clock?: FakeClock;
  /** Where it listens (default 127.0.0.1; a controller pod on the real node reaches podReachableHost()). */
  host?: string;
}

export interface FakeAnthropic {
  /** Pass as the client's baseUrl. */
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  batches: ReadonlyMap<string, FakeAnthropicBatch>;
  clock: FakeClock;
  /** Queues the outcome of the next created batch (FIFO); unscripted batches succeed. */
  script(outcome: AnthropicOutcome, options?: { processingMs?: number }): void;
  /** Changes an existing batch's outcome (before it ends). */
  setOutcome(batchId: string, outcome: AnthropicOutcome): void;
  /** Moves the virtual clock; batches whose time has come end. */
  advance(ms: number): void;
  /** Ends a batch now with its scripted outcome. */
  finish(batchId: string): void;
  inject(rule: FaultRule): void;
  clearFaults(): void;
  close(): Promise<void>;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * The models the fake serves and their output limits (docs/batch-providers.md#what-each-api-refuses: 128K for the
 * 5.x models; the 4.x limits are the fake's assumption, 64K).
 */
export const ANTHROPIC_MODELS: Readonly<Record<string, number>> = {
  "claude-fable-5-1": 128_000,
  "claude-opus-5-5": 128_000,
  "claude-opus-5": 128_000,
  "claude-sonnet-5-5": 128_000,
  "claude-sonnet-5": 128_000,
  "claude-haiku-5-5": 128_000,
  "claude-opus-4-8": 64_000,
  "claude-opus-4-7": 64_000,
  "claude-opus-4-6": 64_000,
  "claude-opus-4-5": 64_000,
  "claude-sonnet-4-6": 64_000,
  "claude-sonnet-4-5": 64_000,
  "claude-sonnet-4": 64_000,
  "claude-haiku-4-5": 64_000,
};

/** The Messages API create body's fields (non-streaming); anything else is an extra input. */
const PARAMS_FIELDS = new Set([
  "model",
  "max_tokens",
  "messages",
  "system",
  "metadata",
  "stop_sequences",
  "temperature",
  "top_k",
  "top_p",
  "thinking",
  "tools",
  "tool_choice",
  "output_config",
  "service_tier",
  "container",
  "mcp_servers",
  "context_management",
  "inference_geo",
]);

/** Structured-output schema keywords the API rejects (docs/batch-providers.md#what-each-api-refuses). */
const UNSUPPORTED_SCHEMA_KEYWORDS = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "maxItems",
  "minProperties",
  "maxProperties",
];

export function anthropicError(status: number, message: string) {
  const type =
    {
      400: "invalid_request_error",
      401: "authentication_error",
      402: "billing_error",
      403: "permission_error",
      404: "not_found_error",
      413: "request_too_large",
      429: "rate_limit_error",
      504: "timeout_error",
      529: "overloaded_error",
    }[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  return { type: "error", error: { type, message }, request_id: "req_fake0000000000000000" };
}

const fail = (status: number, message: string): FakeResponse => ({
  status,
  json: anthropicError(status, message),
  headers: { "request-id": "req_fake0000000000000000" },
});

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const apiKey = options.apiKey ?? "test-anthropic-key";
  const processingMs = options.processingMs ?? 60_000;
  const models = options.models ?? ANTHROPIC_MODELS;
  const cancelMs = options.cancelMs ?? 30_000;
  const clock = options.clock ?? new FakeClock();
  const batches = new Map<string, FakeAnthropicBatch>();
  const queue: AnthropicScript[] = [];
  const nextId = idMaker("msgbatch_fake");
  const nextMsg = idMaker("msg_fake");

  const tick = (b: FakeAnthropicBatch) => {
    if (b.status !== "ended" && clock.nowMs >= b.endsAt) {
      b.status = "ended";
      b.endedAt = b.endsAt;
    }
  };

  const resultFor = (b: FakeAnthropicBatch, r: FakeAnthropicBatch["requests"][number]) => {
    const o = b.outcome;
    if (o.type === "errored") return { type: "errored", error: anthropicErrorResult(o.error) };
    if (o.type !== "succeeded") return { type: o.type };
    const thinking = o.thinking === undefined ? "Considering the request." : o.thinking;
    const content: unknown[] = [];
    if (thinking !== null) content.push({ type: "thinking", thinking, signature: "EqQBCkYIARgCKkD" });
    content.push({ type: "text", text: o.text ?? "ok", citations: null });
    return {
      type: "succeeded",
      message: {
        id: nextMsg(),
        type: "message",
        role: "assistant",
        model: r.params.model,
        content,
        stop_reason: "end_turn",
        stop_sequence: null,
        stop_details: null,
        container: null,
        usage: {
          input_tokens: 48,
          output_tokens: 75,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
          output_tokens_details: { thinking_tokens: 40 },
          server_tool_use: null,
          service_tier: "batch",
          inference_geo: null,
        },
        ...o.message,
      },
    };
  };

  const view = (b: FakeAnthropicBatch, origin: string) => {
    const n = b.requests.length;
    const ended = b.status === "ended";
    const counts = { processing: ended ? 0 : n, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    if (ended) counts[b.outcome.type] = n;
    return {
      id: b.id,
      type: "message_batch",
      processing_status: b.status,
      request_counts: counts,
      ended_at: b.endedAt !== undefined ? clock.iso(b.endedAt) : null,
      created_at: clock.iso(b.createdAt),
      expires_at: clock.iso(b.createdAt + DAY_MS),
      archived_at: null,
      cancel_initiated_at: b.cancelInitiatedAt !== undefined ? clock.iso(b.cancelInitiatedAt) : null,
      results_url: ended ? `${origin}/v1/messages/batches/${b.id}/results` : null,
    };
  };

  /**
   * GET /v1/messages/batches?limit=&before_id=&after_id=: newest first, the batch objects without
   * their requests (as the real API lists them), deleted batches left out; limit 1..1000, default 20.
   */
  const listBatches = (req: FakeRequest, origin: string): FakeResponse => {
    const limitText = req.query.get("limit");
    const limit = limitText === null ? 20 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      return fail(400, "limit: Input should be less than or equal to 1000");
    }
    const all = [...batches.values()].filter((b) => !b.deleted).reverse();
    for (const b of all) tick(b);
    const afterId = req.query.get("after_id");
    const beforeId = req.query.get("before_id");
    let page = all;
    if (afterId !== null) page = all.slice(all.findIndex((b) => b.id === afterId) + 1);
    else if (beforeId !== null)
      page = all.slice(
        0,
        Math.max(
          0,
          all.findIndex((b) => b.id === beforeId),
        ),
      );
    const data = page.slice(0, limit).map((b) => view(b, origin));
    return {
      status: 200,
      json: {
        data,
        has_more: page.length > limit,
        first_id: data[0]?.id ?? null,
        last_id: data[data.length - 1]?.id ?? null,
      },
    };
  };

  const handle = (req: FakeRequest, origin: string): FakeResponse => {
    if (req.headers["x-api-key"] !== apiKey) return fail(401, "invalid x-api-key");
    if (req.headers["anthropic-version"] === undefined)
      return fail(400, "anthropic-version: header is required");
    const m = /^\/v1\/messages\/batches(?:\/([^/]+)(\/results|\/cancel)?)?$/.exec(req.path);
    if (m === null) return fail(404, `Not found: ${req.method} ${req.path}`);
    const [, id, sub] = m;
    if (id === undefined && req.method === "GET") return listBatches(req, origin);
    if (id === undefined) {
      if (req.method !== "POST") return fail(405 as number, "Method not allowed");
      const problem = validateCreate(req.json);
      if (problem !== undefined) return fail(400, problem);
      const body = req.json as { requests: FakeAnthropicBatch["requests"] };
      const script: AnthropicScript = queue.shift() ?? { outcome: { type: "succeeded" } };
      const problem2 = body.requests.map((r) => paramsProblem(r.params, models)).find((p) => p !== undefined);
      if (problem2 !== undefined) script.outcome = { type: "errored", error: problem2 };
      const duration = script.processingMs ?? (script.outcome.type === "expired" ? DAY_MS : processingMs);
      const b: FakeAnthropicBatch = {
        id: nextId(),
        status: "in_progress",
        createdAt: clock.nowMs,
        endsAt: clock.nowMs + duration,
        requests: body.requests,
        outcome: script.outcome,
        deleted: false,
      };
      batches.set(b.id, b);
      return { status: 200, json: view(b, origin) };
    }
    const b = batches.get(id);
    if (b === undefined || b.deleted) return fail(404, `No message batch found with id ${id}`);
    tick(b);
    if (sub === "/cancel") {
      if (req.method !== "POST") return fail(405 as number, "Method not allowed");
      if (b.status === "ended") return fail(400, `Batch ${id} has already ended and cannot be canceled.`);
      if (b.status === "in_progress") {
        b.status = "canceling";
        b.cancelInitiatedAt = clock.nowMs;
        if (b.endsAt > clock.nowMs + cancelMs) {
          b.endsAt = clock.nowMs + cancelMs;
          b.outcome = { type: "canceled" };
        }
      }
      return { status: 200, json: view(b, origin) };
    }
    if (sub === "/results") {
      if (req.method !== "GET") return fail(405 as number, "Method not allowed");
      if (b.status !== "ended") return fail(400, `Batch ${id} has not ended; results are not available yet.`);
      const lines = b.requests.map((r) =>
        JSON.stringify({ custom_id: r.custom_id, result: resultFor(b, r) }),
      );
      return {
        status: 200,
        text: `${lines.join("\n")}\n`,
        headers: { "content-type": "application/binary" },
      };
    }
    if (req.method === "GET") return { status: 200, json: view(b, origin) };
    if (req.method === "DELETE") {
      if (b.status !== "ended") {
        return fail(400, `Batch ${id} cannot be deleted until it has finished processing; cancel it first.`);
      }
      b.deleted = true;
      return { status: 200, json: { id, type: "message_batch_deleted" } };
    }
    return fail(405 as number, "Method not allowed");
  };

  const server = await startFakeServer({ clock, errorBody: anthropicError, handle, host: options.host });
  return {
    url: server.origin,
    apiKey,
    requests: server.requests,
    batches,
    clock,
    script(outcome, opts) {
      queue.push({ outcome, processingMs: opts?.processingMs });
    },
    setOutcome(batchId, outcome) {
      const b = batches.get(batchId);
      if (b === undefined) throw new Error(`setOutcome: no batch ${batchId}`);
      b.outcome = outcome;
    },
    advance(ms) {
      clock.advance(ms);
      for (const b of batches.values()) tick(b);
    },
    finish(batchId) {
      const b = batches.get(batchId);
      if (b === undefined) throw new Error(`finish: no batch ${batchId}`);
      b.endsAt = Math.min(b.endsAt, clock.nowMs);
      tick(b);
    },
    inject: server.inject,
    clearFaults: server.clearFaults,
    close: server.close,
  };
}

/** errored results nest the whole error envelope: result.error.error.{type,message}. */
function anthropicErrorResult(error: { type: string; message: string }) {
  return { type: "error", error, request_id: "req_fake0000000000000001" };
}

function validateCreate(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return "body: expected an object";
  const extra = Object.keys(body).find((k) => k !== "requests");
  if (extra !== undefined) return `${extra}: Extra inputs are not permitted`;
  const requests = (body as { requests?: unknown }).requests;
  if (!Array.isArray(requests) || requests.length === 0) return "requests: expected a non-empty array";
  const seen = new Set<string>();
  for (const [i, r] of requests.entries()) {
    if (typeof r !== "object" || r === null) return `requests.${i}: expected an object`;
    const extraField = Object.keys(r).find((k) => k !== "custom_id" && k !== "params");
    if (extraField !== undefined) return `requests.${i}.${extraField}: Extra inputs are not permitted`;
    const { custom_id, params } = r as { custom_id?: unknown; params?: unknown };
    if (typeof custom_id !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(custom_id)) {
      return `requests.${i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    }
    if (seen.has(custom_id)) return `requests.${i}.custom_id: must be unique within the batch`;
    seen.add(custom_id);
    if (typeof params !== "object" || params === null) return `requests.${i}.params: Field required`;
  }
  return undefined;
}

type ApiError = { type: string; message: string };
const invalid = (message: string): ApiError => ({ type: "invalid_request_error", message });

/**
 * params are validated asynchronously by the real API: a bad request comes back errored. The
 * fake refuses what the real API refuses: extra (misspelt) fields, an unknown model, max_tokens
 * outside 1..the model's limit, messages other than {role, content}, schema keywords structured
 * output does not support.
 */
function paramsProblem(
  params: Record<string, unknown>,
  models: Readonly<Record<string, number>>,
): ApiError | undefined {
  const extra = Object.keys(params).find((k) => !PARAMS_FIELDS.has(k));
  if (extra !== undefined) return invalid(`${extra}: Extra inputs are not permitted`);
  if (typeof params.model !== "string") return invalid("model: Field required");
  const limit = models[params.model];
  if (limit === undefined) return { type: "not_found_error", message: `model: ${params.model}` };
  if (typeof params.max_tokens !== "number" || params.max_tokens < 1) {
    return invalid("max_tokens: Input should be greater than or equal to 1");
  }
  if (params.max_tokens > limit) {
    return invalid(
      `max_tokens: ${params.max_tokens} > ${limit}, which is the maximum allowed number of output tokens for ${params.model}`,
    );
  }
  if (!Array.isArray(params.messages) || params.messages.length === 0)
    return invalid("messages: Field required");
  for (const [i, m] of params.messages.entries()) {
    const extraKey = Object.keys(m as object).find((k) => k !== "role" && k !== "content");
    if (extraKey !== undefined) return invalid(`messages.${i}.${extraKey}: Extra inputs are not permitted`);
  }
  const config = params.output_config as Record<string, unknown> | undefined;
  if (config !== undefined) {
    const extraKey = Object.keys(config).find((k) => k !== "format" && k !== "effort");
    if (extraKey !== undefined) return invalid(`output_config.${extraKey}: Extra inputs are not permitted`);
    const format = config.format as Record<string, unknown> | undefined;
    if (format !== undefined) {
      const bad = Object.keys(format).find((k) => k !== "type" && k !== "schema");
      if (bad !== undefined) return invalid(`output_config.format.${bad}: Extra inputs are not permitted`);
      const keyword = findKeyword(format.schema, UNSUPPORTED_SCHEMA_KEYWORDS);
      if (keyword !== undefined) {
        return invalid(
          `output_config.format.schema: '${keyword}' is not supported in structured output schemas`,
        );
      }
    }
  }
  return undefined;
}

/** The first of `keywords` used anywhere in a JSON Schema (minItems above 1 counts too). */
export function findKeyword(schema: unknown, keywords: readonly string[]): string | undefined {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const k = findKeyword(item, keywords);
      if (k !== undefined) return k;
    }
    return undefined;
  }
  if (typeof schema !== "object" || schema === null) return undefined;
  const s = schema as Record<string, unknown>;
  for (const k of keywords) if (k in s && typeof s[k] !== "object") return k;
  if (keywords.includes("maxItems") && typeof s.minItems === "number" && s.minItems > 1) return "minItems";
  for (const [key, value] of Object.entries(s)) {
    // Under properties the keys are property names, not keywords.
    if (key === "properties" && typeof value === "object" && value !== null) {
      const k = findKeyword(Object.values(value), keywords);
      if (k !== undefined) return k;
    } else if (typeof value === "object") {
      const k = findKeyword(value, keywords);
      if (k !== undefined) return k;
    }
  }
  return undefined;
}
