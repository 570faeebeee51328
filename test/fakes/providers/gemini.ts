/**
 * A fake Gemini Batch API (docs/batch-providers.md): x-goog-api-key (or ?key=) check, the Google
 * error envelope, long-running Operation objects whose metadata.state moves PENDING → RUNNING →
 * a terminal state on a virtual clock, inline responses in metadata.output and response, best-
 * effort cancel, and DELETE that removes the batch whatever its state.
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

type Status = { code: number; message: string };

export type GeminiOutcome =
  | {
      type: "succeeded";
      /** Answer text (default "ok"). */
      text?: string;
      /** A thought part before the answer (default "Thinking about it."); null for none. */
      thought?: string | null;
      /** Fields merged over the default GenerateContentResponse (usageMetadata, modelVersion…). */
      response?: Record<string, unknown>;
    }
  /** No candidates; promptFeedback.blockReason set. */
  | { type: "blocked"; blockReason: string }
  /** The inlined response carries an error instead of a response. */
  | { type: "request-error"; error: Status }
  | { type: "failed"; error?: Status }
  | { type: "cancelled"; error?: Status }
  | { type: "expired"; error?: Status };

export interface FakeGeminiBatch {
  id: string;
  model: string;
  displayName: string;
  state: "PENDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED" | "EXPIRED";
  createdAt: number;
  runsAt: number;
  endsAt: number;
  endedAt?: number;
  /** The inlined requests of the create body, as sent. */
  requests: { request: Record<string, unknown>; metadata?: Record<string, unknown> }[];
  outcome: GeminiOutcome;
  deleted: boolean;
  /** Virtual time a cancel was accepted (the state stays RUNNING until it settles). */
  cancelRequestedAt?: number;
  /**
   * The state the batch was in when it was deleted. A DELETE does not cancel: a batch deleted
   * while PENDING or RUNNING without a cancel first runs on and is billed (docs/batch-providers.md#what-each-api-refuses).
   */
  deletedInState?: FakeGeminiBatch["state"];
}

export interface FakeGeminiOptions {
  apiKey?: string;
  /** Virtual ms a batch stays PENDING (1 s). */
  pendingMs?: number;
  /** Default virtual ms from creation to the end state (60 s; expired: 48 h). */
  processingMs?: number;
  /**
   * Virtual ms a cancelled batch takes to reach CANCELLED (default 30 s: cancel is best effort
   * and settles later; the batch reads RUNNING meanwhile). 0: at once.
   */
  cancelMs?: number;
  /** Model id → maximum maxOutputTokens; any other model is a 404 at create. Default: GEMINI_MODELS. */
  models?: Readonly<Record<string, number>>;
  /** The @type package seen in real payloads. */
  typePackage?: string;
  clock?: FakeClock;
  /** Where it listens (default 127.0.0.1; a controller pod on the real node reaches podReachableHost()). */
  host?: string;
}

export interface FakeGemini {
  /** Pass as the client's baseUrl. */
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  batches: ReadonlyMap<string, FakeGeminiBatch>;
  clock: FakeClock;
  script(outcome: GeminiOutcome, options?: { processingMs?: number }): void;
  setOutcome(batchId: string, outcome: GeminiOutcome): void;
  advance(ms: number): void;
  finish(batchId: string): void;
  inject(rule: FaultRule): void;
  clearFaults(): void;
  close(): Promise<void>;
}

const GOOGLE_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

export function googleError(code: number, message: string, status?: string) {
  return {
    error: { code, message, status: status ?? GOOGLE_STATUS[code] ?? (code >= 500 ? "INTERNAL" : "UNKNOWN") },
  };
}

const fail = (code: number, message: string, status?: string): FakeResponse => ({
  status: code,
  json: googleError(code, message, status),
});

const HOUR_MS = 3600 * 1000;

/** The models the fake serves for batchGenerateContent, with their output limits (the fake's assumption: 65,536). */
export const GEMINI_MODELS: Readonly<Record<string, number>> = {
  "gemini-3.1-flash-lite": 65_536,
  "gemini-3.1-flash": 65_536,
  "gemini-3.1-pro": 65_536,
  "gemini-3-flash": 65_536,
  "gemini-3-pro": 65_536,
  "gemini-2.5-flash": 65_536,
  "gemini-2.5-flash-lite": 65_536,
  "gemini-2.5-pro": 65_536,
};

/** Known fields per message of the create body (proto3 JSON also accepts the snake_case names). */
const KNOWN_FIELDS: Record<string, readonly string[]> = {
  body: ["batch"],
  batch: ["displayName", "inputConfig", "priority", "model", "name"],
  inputConfig: ["requests", "fileName"],
  requests: ["requests"],
  inlinedRequest: ["request", "metadata"],
  request: [
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "safetySettings",
    "generationConfig",
    "cachedContent",
    "model",
  ],
  content: ["role", "parts"],
  part: ["text", "thought", "thoughtSignature", "inlineData", "fileData"],
  generationConfig: [
    "maxOutputTokens",
    "responseMimeType",
    "responseJsonSchema",
    "responseSchema",
    "temperature",
    "topP",
    "topK",
    "candidateCount",
    "stopSequences",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "thinkingConfig",
    "responseModalities",
    "mediaResolution",
  ],
};

/** responseJsonSchema keywords the API accepts (docs/batch-providers.md#what-each-api-refuses); any other is refused. */
const JSON_SCHEMA_KEYWORDS = new Set([
  "$id",
  "$defs",
  "$ref",
  "$anchor",
  "type",
  "format",
  "title",
  "description",
  "enum",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "anyOf",
  "oneOf",
  "properties",
  "additionalProperties",
  "required",
  "propertyOrdering",
]);

export async function startFakeGemini(options: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const apiKey = options.apiKey ?? "test-gemini-key";
  const pendingMs = options.pendingMs ?? 1_000;
  const processingMs = options.processingMs ?? 60_000;
  const cancelMs = options.cancelMs ?? 30_000;
  const models = options.models ?? GEMINI_MODELS;
  const pkg = options.typePackage ?? "google.ai.generativelanguage.v1main";
  const clock = options.clock ?? new FakeClock();
  const batches = new Map<string, FakeGeminiBatch>();
  const queue: { outcome: GeminiOutcome; processingMs?: number }[] = [];
  const nextId = idMaker("fakebatch");
  const nextResponse = idMaker("fake-response-");

  const terminalState = (o: GeminiOutcome): FakeGeminiBatch["state"] =>
    o.type === "failed"
      ? "FAILED"
      : o.type === "cancelled"
        ? "CANCELLED"
        : o.type === "expired"
          ? "EXPIRED"
          : "SUCCEEDED";

  const tick = (b: FakeGeminiBatch) => {
    if (b.state === "PENDING" && clock.nowMs >= b.runsAt) b.state = "RUNNING";
    if ((b.state === "PENDING" || b.state === "RUNNING") && clock.nowMs >= b.endsAt) {
      b.state = terminalState(b.outcome);
      b.endedAt = b.endsAt;
    }
  };

  const inlinedResponse = (b: FakeGeminiBatch, r: FakeGeminiBatch["requests"][number]) => {
    const o = b.outcome;
    const metadata = r.metadata !== undefined ? { metadata: r.metadata } : {};
    if (o.type === "request-error") return { ...metadata, error: { ...o.error, details: [] } };
    const usageMetadata = {
      promptTokenCount: 48,
      candidatesTokenCount: 13,
      totalTokenCount: 61,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: 48 }],
    };
    if (o.type === "blocked") {
      return {
        ...metadata,
        response: {
          promptFeedback: { blockReason: o.blockReason, safetyRatings: [] },
          usageMetadata: { promptTokenCount: 48, totalTokenCount: 48 },
          modelVersion: b.model,
          responseId: nextResponse(),
        },
      };
    }
    if (o.type !== "succeeded") return undefined;
    const thought = o.thought === undefined ? "Thinking about it." : o.thought;
    const parts: unknown[] = [];
    if (thought !== null) parts.push({ text: thought, thought: true });
    parts.push({ text: o.text ?? "ok" });
    return {
      ...metadata,
      response: {
        candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
        usageMetadata,
        modelVersion: b.model,
        responseId: nextResponse(),
        ...o.response,
      },
    };
  };

  const operation = (b: FakeGeminiBatch) => {
    const done = b.state !== "PENDING" && b.state !== "RUNNING";
    const n = String(b.requests.length);
    const metadata: Record<string, unknown> = {
      "@type": `type.googleapis.com/${pkg}.GenerateContentBatch`,
      model: `models/${b.model}`,
      displayName: b.displayName,
      createTime: clock.iso(b.createdAt),
      updateTime: clock.iso(b.endedAt ?? b.createdAt),
      batchStats: done
        ? {
            requestCount: n,
            successfulRequestCount: b.state === "SUCCEEDED" && b.outcome.type !== "request-error" ? n : "0",
          }
        : { requestCount: n, pendingRequestCount: n },
      state: `BATCH_STATE_${b.state}`,
      name: `batches/${b.id}`,
    };
    const op: Record<string, unknown> = { name: `batches/${b.id}`, metadata, done };
    if (done) {
      metadata.endTime = clock.iso(b.endedAt);
      if (b.state === "SUCCEEDED") {
        const inlined = { inlinedResponses: b.requests.map((r) => inlinedResponse(b, r)) };
        metadata.output = { inlinedResponses: inlined };
        op.response = {
          "@type": `type.googleapis.com/${pkg}.GenerateContentBatchOutput`,
          inlinedResponses: inlined,
        };
      } else {
        const o = b.outcome;
        if (
          (o.type === "failed" || o.type === "cancelled" || o.type === "expired") &&
          o.error !== undefined
        ) {
          op.error = { ...o.error, details: [] };
        }
      }
    }
    return op;
  };

  /**
   * GET /v1beta/batches?pageSize=&pageToken=: a ListOperationsResponse (`operations`,
   * `nextPageToken` while more remain), deleted batches left out. The order is not documented;
   * this fake lists oldest first, so a client cannot come to rely on newest first.
   */
  const listBatches = (req: FakeRequest): FakeResponse => {
    const size = Number(req.query.get("pageSize") ?? "50");
    if (!Number.isInteger(size) || size < 1) return fail(400, "Invalid page size.", "INVALID_ARGUMENT");
    const token = req.query.get("pageToken");
    const start = token === null || token === "" ? 0 : Number(token);
    if (!Number.isInteger(start) || start < 0) return fail(400, "Invalid page token.", "INVALID_ARGUMENT");
    const all = [...batches.values()].filter((b) => !b.deleted);
    for (const b of all) tick(b);
    const page = all.slice(start, start + size);
    return {
      status: 200,
      json: {
        operations: page.map((b) => operation(b)),
        ...(start + size < all.length ? { nextPageToken: String(start + size) } : {}),
      },
    };
  };

  const handle = (req: FakeRequest): FakeResponse => {
    const key = req.headers["x-goog-api-key"] ?? req.query.get("key") ?? undefined;
    if (key === undefined) {
      return fail(
        403,
        "Method doesn't allow unregistered callers. Please use an API key.",
        "PERMISSION_DENIED",
      );
    }
    if (key !== apiKey)
      return fail(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT");
    const create = /^\/v1beta\/models\/([^/:]+):batchGenerateContent$/.exec(req.path);
    if (create !== null) {
      if (req.method !== "POST") return fail(404, "Method not found.", "NOT_FOUND");
      const model = create[1] as string;
      const limit = models[model];
      if (limit === undefined) {
        return fail(
          404,
          `models/${model} is not found for API version v1beta, or is not supported for batchGenerateContent. Call ListModels to see the list of available models and their supported methods.`,
          "NOT_FOUND",
        );
      }
      const problem = validateCreate(req.json) ?? requestProblem(req.json, limit);
      if (problem !== undefined) return fail(400, problem);
      const batch = (
        req.json as {
          batch: {
            displayName: string;
            inputConfig: { requests: { requests: FakeGeminiBatch["requests"] } };
          };
        }
      ).batch;
      const script = queue.shift() ?? { outcome: { type: "succeeded" } as GeminiOutcome };
      const duration =
        script.processingMs ?? (script.outcome.type === "expired" ? 48 * HOUR_MS : processingMs);
      const b: FakeGeminiBatch = {
        id: nextId(),
        model: create[1] as string,
        displayName: batch.displayName,
        state: "PENDING",
        createdAt: clock.nowMs,
        runsAt: clock.nowMs + Math.min(pendingMs, duration),
        endsAt: clock.nowMs + duration,
        requests: batch.inputConfig.requests.requests,
        outcome: script.outcome,
        deleted: false,
      };
      batches.set(b.id, b);
      return { status: 200, json: operation(b) };
    }
    if (req.path === "/v1beta/batches" && req.method === "GET") return listBatches(req);
    const m = /^\/v1beta\/batches\/([^/:]+)(:cancel)?$/.exec(req.path);
    if (m === null) return fail(404, `Requested entity was not found: ${req.path}`);
    const b = batches.get(m[1] as string);
    if (b === undefined || b.deleted) return fail(404, "Requested entity was not found.");
    tick(b);
    if (m[2] === ":cancel") {
      if (req.method !== "POST") return fail(404, "Method not found.", "NOT_FOUND");
      if (b.state !== "PENDING" && b.state !== "RUNNING") {
        return fail(
          400,
          `Batch is already in a terminal state: BATCH_STATE_${b.state}.`,
          "FAILED_PRECONDITION",
        );
      }
      b.outcome = { type: "cancelled" };
      b.cancelRequestedAt ??= clock.nowMs;
      b.endsAt = Math.min(b.endsAt, clock.nowMs + cancelMs);
      tick(b);
      return { status: 200, json: {} };
    }
    if (req.method === "GET") return { status: 200, json: operation(b) };
    if (req.method === "DELETE") {
      // Delete does not cancel; the client is simply no longer interested in the batch.
      b.deletedInState = b.state;
      b.deleted = true;
      return { status: 200, json: {} };
    }
    return fail(404, "Method not found.", "NOT_FOUND");
  };

  const server = await startFakeServer({
    clock,
    errorBody: (s, msg) => googleError(s, msg),
    handle,
    host: options.host,
  });
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
      b.runsAt = Math.min(b.runsAt, clock.nowMs);
      b.endsAt = Math.min(b.endsAt, clock.nowMs);
      tick(b);
    },
    inject: server.inject,
    clearFaults: server.clearFaults,
    close: server.close,
  };
}

/** proto3 JSON accepts snake_case names too; compare in camelCase. */
const camel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function unknownField(obj: unknown, kind: string, at: string): string | undefined {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return undefined;
  const known = KNOWN_FIELDS[kind] ?? [];
  const bad = Object.keys(obj).find((k) => !known.includes(camel(k)));
  return bad === undefined
    ? undefined
    : `Invalid JSON payload received. Unknown name "${bad}" at '${at}': Cannot find field.`;
}

/**
 * What the real API refuses beyond the shape: a misspelt field anywhere in the request,
 * maxOutputTokens outside 1..the model's limit, both schema fields, a JSON schema without the
 * JSON mime type, and responseJsonSchema keywords it does not support.
 */
function requestProblem(body: unknown, limit: number): string | undefined {
  const b = body as { batch: Record<string, unknown> };
  const top = unknownField(body, "body", "") ?? unknownField(b.batch, "batch", "batch");
  if (top !== undefined) return top;
  const input = (b.batch.inputConfig ?? b.batch.input_config) as Record<string, unknown>;
  const inner = unknownField(input, "inputConfig", "batch.input_config");
  if (inner !== undefined) return inner;
  const list = (input.requests as Record<string, unknown>) ?? {};
  const listProblem = unknownField(list, "requests", "batch.input_config.requests");
  if (listProblem !== undefined) return listProblem;
  for (const [i, r] of (list.requests as Record<string, unknown>[]).entries()) {
    const at = `batch.input_config.requests.requests[${i}]`;
    const request = r.request as Record<string, unknown>;
    const p = unknownField(r, "inlinedRequest", at) ?? unknownField(request, "request", `${at}.request`);
    if (p !== undefined) return p;
    for (const [j, content] of ((request.contents as unknown[]) ?? []).entries()) {
      const cp = unknownField(content, "content", `${at}.request.contents[${j}]`);
      if (cp !== undefined) return cp;
      for (const [k, part] of (((content as { parts?: unknown[] }).parts ?? []) as unknown[]).entries()) {
        const pp = unknownField(part, "part", `${at}.request.contents[${j}].parts[${k}]`);
        if (pp !== undefined) return pp;
      }
    }
    const config = (request.generationConfig ?? request.generation_config) as
      | Record<string, unknown>
      | undefined;
    if (config === undefined) continue;
    const gp = unknownField(config, "generationConfig", `${at}.request.generation_config`);
    if (gp !== undefined) return gp;
    const max = config.maxOutputTokens ?? config.max_output_tokens;
    if (max !== undefined && (typeof max !== "number" || max < 1 || max > limit)) {
      return `Unable to submit request because it has a maxOutputTokens value of ${String(max)} but the supported range is from 1 (inclusive) to ${limit + 1} (exclusive). Update the value and try again.`;
    }
    const jsonSchema = config.responseJsonSchema ?? config.response_json_schema;
    const oldSchema = config.responseSchema ?? config.response_schema;
    if (jsonSchema !== undefined && oldSchema !== undefined) {
      return "responseSchema and responseJsonSchema cannot both be set.";
    }
    if (jsonSchema !== undefined) {
      const mime = config.responseMimeType ?? config.response_mime_type;
      if (mime !== "application/json") {
        return `responseJsonSchema requires responseMimeType application/json, got ${JSON.stringify(mime ?? "text/plain")}.`;
      }
      const keyword = unsupportedJsonSchemaKeyword(jsonSchema);
      if (keyword !== undefined) {
        return `Invalid JSON payload received. Unknown name "${keyword}" at '${at}.request.generation_config.response_json_schema': Cannot find field.`;
      }
    }
  }
  return undefined;
}

function unsupportedJsonSchemaKeyword(schema: unknown): string | undefined {
  if (Array.isArray(schema)) {
    for (const s of schema) {
      const k = unsupportedJsonSchemaKeyword(s);
      if (k !== undefined) return k;
    }
    return undefined;
  }
  if (typeof schema !== "object" || schema === null) return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if (!JSON_SCHEMA_KEYWORDS.has(key)) return key;
    // properties and $defs map names to schemas; the names themselves are not keywords.
    const children = key === "properties" || key === "$defs" ? Object.values(value ?? {}) : value;
    if (key !== "enum" && key !== "required" && key !== "propertyOrdering") {
      const k = unsupportedJsonSchemaKeyword(children);
      if (k !== undefined) return k;
    }
  }
  return undefined;
}

function validateCreate(body: unknown): string | undefined {
  const batch = (body as { batch?: unknown } | undefined)?.batch;
  if (typeof batch !== "object" || batch === null) return "Invalid JSON payload: batch is required.";
  const b = batch as Record<string, unknown>;
  if (typeof b.displayName !== "string" || b.displayName === "") return "batch.display_name is required.";
  const requests = (b.inputConfig as { requests?: { requests?: unknown } } | undefined)?.requests?.requests;
  if (!Array.isArray(requests) || requests.length === 0) {
    return "batch.input_config must set requests.requests or file_name.";
  }
  for (const [i, r] of requests.entries()) {
    const request = (r as { request?: { contents?: unknown } } | undefined)?.request;
    if (!Array.isArray(request?.contents) || request.contents.length === 0) {
      return `batch.input_config.requests.requests[${i}].request.contents is required.`;
    }
  }
  return undefined;
}
