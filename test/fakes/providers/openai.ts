/**
 * A fake OpenAI Files + Batches API serving /v1/responses batches (docs/batch-providers.md): bearer
 * auth, the OpenAI error envelope, multipart uploads, input-file validation, batches moving
 * validating → in_progress → finalizing → completed (or failed / expired / cancelling →
 * cancelled) on a virtual clock, output and error files written only when the batch settles,
 * and file deletion with 404 for a file that is gone. Strict json_schema formats are checked
 * the way the real API does, so a schema without required/additionalProperties fails its line.
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

type ApiError = { message: string; type: string; param?: string | null; code?: string | null };

export type OpenAIOutcome =
  | {
      type: "succeeded";
      /** Answer text (default "ok"). */
      text?: string;
      /** Fields merged over the default Response body (usage, output, model…). */
      response?: Record<string, unknown>;
    }
  /** The message holds only a refusal. */
  | { type: "refusal"; refusal: string }
  /** status incomplete with incomplete_details.reason (default max_output_tokens). */
  | { type: "incomplete"; reason?: string }
  /** A 200 Response with status failed and this error. */
  | { type: "response-failed"; error: { code: string; message: string } }
  /** The sub-request answered non-2xx: a line in the error file. */
  | { type: "request-failed"; statusCode?: number; error: ApiError }
  /** A line in the error file with response null and this error. */
  | { type: "line-error"; error: { code: string; message: string } }
  /** Completed, but neither file holds a line. */
  | { type: "no-result" }
  /** The batch fails validation, with these errors. */
  | {
      type: "failed";
      errors?: { code: string; message: string; line?: number | null; param?: string | null }[];
    }
  /** The 24 h window passes. */
  | { type: "expired" };

export interface FakeOpenAIFile {
  id: string;
  filename: string;
  purpose: string;
  content: string;
  createdAt: number;
  deleted: boolean;
}

export interface FakeOpenAIBatch {
  id: string;
  status:
    | "validating"
    | "failed"
    | "in_progress"
    | "finalizing"
    | "completed"
    | "expired"
    | "cancelling"
    | "cancelled";
  inputFileId: string;
  endpoint: string;
  metadata: Record<string, string> | null;
  createdAt: number;
  /** Virtual times of the next transitions. */
  inProgressAt: number;
  finalizingAt: number;
  completedAt: number;
  cancelledAt?: number;
  cancellingAt?: number;
  settledAt?: number;
  outputFileId?: string;
  errorFileId?: string;
  outcome: OpenAIOutcome;
  /** Parsed lines of the input file. */
  lines: Record<string, unknown>[];
  /** Validation errors found in the input file (the batch fails with them). */
  validationErrors: { code: string; message: string; line: number | null; param: string | null }[];
}

export interface FakeOpenAIOptions {
  apiKey?: string;
  /** Model id → maximum max_output_tokens; any other model fails its line with model_not_found. Default: OPENAI_MODELS. */
  models?: Readonly<Record<string, number>>;
  /** Virtual ms spent validating (1 s). */
  validatingMs?: number;
  /** Default virtual ms from creation to finalizing (60 s). */
  processingMs?: number;
  /** Virtual ms spent finalizing (1 s). */
  finalizingMs?: number;
  /** Virtual ms a batch stays cancelling before it is cancelled and its files appear (10 min). */
  cancelMs?: number;
  clock?: FakeClock;
  /** Where it listens (default 127.0.0.1; a controller pod on the real node reaches podReachableHost()). */
  host?: string;
}

export interface FakeOpenAI {
  /** Pass as the client's baseUrl: http://127.0.0.1:<port>/v1 */
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  batches: ReadonlyMap<string, FakeOpenAIBatch>;
  files: ReadonlyMap<string, FakeOpenAIFile>;
  clock: FakeClock;
  script(outcome: OpenAIOutcome, options?: { processingMs?: number }): void;
  setOutcome(batchId: string, outcome: OpenAIOutcome): void;
  advance(ms: number): void;
  /** Runs a batch to its end state now (completed / failed / expired, or cancelled if cancelling). */
  finish(batchId: string): void;
  inject(rule: FaultRule): void;
  clearFaults(): void;
  close(): Promise<void>;
}

const DAY_MS = 24 * 3600 * 1000;

/** The Responses models the fake serves, with their output limits (the fake's assumption: 128,000). */
export const OPENAI_MODELS: Readonly<Record<string, number>> = {
  "gpt-5": 128_000,
  "gpt-5-mini": 128_000,
  "gpt-5-nano": 128_000,
  "gpt-5-codex": 128_000,
  "gpt-5.1": 128_000,
  "gpt-5.1-codex": 128_000,
  o3: 100_000,
  "o4-mini": 100_000,
  "codex-mini-latest": 100_000,
};

/** CreateBatchRequest's fields (specs/openai-openapi.yaml); anything else is refused at create. */
const CREATE_BATCH_FIELDS = new Set([
  "input_file_id",
  "endpoint",
  "completion_window",
  "metadata",
  "output_expires_after",
]);

/** CreateResponse's fields a batch line may carry (specs/openai-openapi.yaml). */
const RESPONSE_FIELDS = new Set([
  "model",
  "input",
  "instructions",
  "max_output_tokens",
  "max_tool_calls",
  "text",
  "store",
  "reasoning",
  "metadata",
  "service_tier",
  "temperature",
  "top_p",
  "top_logprobs",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "previous_response_id",
  "conversation",
  "truncation",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "include",
  "background",
  "prompt",
  "stream",
  "stream_options",
]);

/** JSON Schema keywords strict structured outputs do not permit. */
const STRICT_UNSUPPORTED = [
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "patternProperties",
  "unevaluatedProperties",
];

export function openaiError(status: number, message: string, extra: Partial<ApiError> = {}) {
  const type =
    status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message, type, param: null, code: null, ...extra } };
}

const fail = (status: number, message: string, extra: Partial<ApiError> = {}): FakeResponse => ({
  status,
  json: openaiError(status, message, extra),
});

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const apiKey = options.apiKey ?? "test-openai-key";
  const validatingMs = options.validatingMs ?? 1_000;
  const processingMs = options.processingMs ?? 60_000;
  const finalizingMs = options.finalizingMs ?? 1_000;
  const cancelMs = options.cancelMs ?? 10 * 60_000;
  const models = options.models ?? OPENAI_MODELS;
  const clock = options.clock ?? new FakeClock();
  const batches = new Map<string, FakeOpenAIBatch>();
  const files = new Map<string, FakeOpenAIFile>();
  const queue: { outcome: OpenAIOutcome; processingMs?: number }[] = [];
  const nextFile = idMaker("file-fake");
  const nextBatch = idMaker("batch_fake");
  const nextReq = idMaker("batch_req_fake");
  const nextResp = idMaker("resp_fake");

  const addFile = (filename: string, purpose: string, content: string): FakeOpenAIFile => {
    const f = { id: nextFile(), filename, purpose, content, createdAt: clock.nowMs, deleted: false };
    files.set(f.id, f);
    return f;
  };

  const fileView = (f: FakeOpenAIFile) => ({
    id: f.id,
    object: "file",
    bytes: Buffer.byteLength(f.content),
    created_at: clock.unixSeconds(f.createdAt),
    expires_at: clock.unixSeconds(f.createdAt + 30 * DAY_MS),
    filename: f.filename,
    purpose: f.purpose,
    status: "processed",
    status_details: null,
  });

  /** One output-or-error line for one input line; `file` says which file it belongs in. */
  const resultLine = (b: FakeOpenAIBatch, line: Record<string, unknown>) => {
    const base = { id: nextReq(), custom_id: line.custom_id };
    const body = (line.body ?? {}) as Record<string, unknown>;
    const o = b.outcome;
    const refused = lineProblem(body, models);
    if (refused !== undefined) {
      return {
        file: "error" as const,
        line: {
          ...base,
          response: {
            status_code: refused.status,
            request_id: `req_${base.id}`,
            body: openaiError(refused.status, refused.message, { param: refused.param, code: refused.code }),
          },
          error: null,
        },
      };
    }
    if (o.type === "request-failed") {
      return {
        file: "error" as const,
        line: {
          ...base,
          response: {
            status_code: o.statusCode ?? 400,
            request_id: `req_${base.id}`,
            body: { error: { param: null, code: null, ...o.error } },
          },
          error: null,
        },
      };
    }
    if (o.type === "line-error")
      return { file: "error" as const, line: { ...base, response: null, error: o.error } };
    const message = (content: unknown[], status = "completed") => ({
      type: "message",
      id: `msg_${base.id}`,
      role: "assistant",
      status,
      content,
    });
    const text = (t: string) => ({ type: "output_text", text: t, annotations: [], logprobs: [] });
    let output: unknown[] = [
      { type: "reasoning", id: `rs_${base.id}`, summary: [], encrypted_content: null },
    ];
    let status = "completed";
    let error: unknown = null;
    let incomplete: unknown = null;
    if (o.type === "succeeded") output.push(message([text(o.text ?? "ok")]));
    if (o.type === "refusal") output.push(message([{ type: "refusal", refusal: o.refusal }]));
    if (o.type === "incomplete") {
      status = "incomplete";
      incomplete = { reason: o.reason ?? "max_output_tokens" };
      output.push(message([text('{"sev')], "incomplete"));
    }
    if (o.type === "response-failed") {
      status = "failed";
      error = o.error;
      output = [];
    }
    const response = {
      id: nextResp(),
      object: "response",
      created_at: clock.unixSeconds(b.createdAt),
      status,
      completed_at: status === "completed" ? clock.unixSeconds() : null,
      error,
      incomplete_details: incomplete,
      model: `${String(body.model)}-2026-08-01`,
      output,
      usage: {
        input_tokens: 48,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 75,
        output_tokens_details: { reasoning_tokens: 64 },
        total_tokens: 123,
      },
      max_output_tokens: body.max_output_tokens ?? null,
      text: body.text ?? { format: { type: "text" } },
      store: body.store ?? true,
      ...(o.type === "succeeded" ? o.response : {}),
    };
    return {
      file: "output" as const,
      line: {
        ...base,
        response: { status_code: 200, request_id: `req_${base.id}`, body: response },
        error: null,
      },
    };
  };

  const writeFiles = (b: FakeOpenAIBatch, out: string[], err: string[]) => {
    if (out.length > 0)
      b.outputFileId = addFile(`${b.id}_output.jsonl`, "batch_output", `${out.join("\n")}\n`).id;
    if (err.length > 0)
      b.errorFileId = addFile(`${b.id}_error.jsonl`, "batch_output", `${err.join("\n")}\n`).id;
  };

  const notRunLines = (b: FakeOpenAIBatch, code: string, message: string) =>
    b.lines.map((l) =>
      JSON.stringify({ id: nextReq(), custom_id: l.custom_id, response: null, error: { code, message } }),
    );

  const tick = (b: FakeOpenAIBatch) => {
    const now = clock.nowMs;
    if (b.status === "cancelling") {
      if (b.cancelledAt !== undefined && now >= b.cancelledAt) {
        b.status = "cancelled";
        b.settledAt = b.cancelledAt;
        writeFiles(
          b,
          [],
          notRunLines(b, "batch_cancelled", "This request was cancelled before it could be executed."),
        );
      }
      return;
    }
    if (b.status === "validating" && now >= b.inProgressAt) {
      if (b.validationErrors.length > 0 || b.outcome.type === "failed") {
        b.status = "failed";
        b.settledAt = b.inProgressAt;
        return;
      }
      b.status = "in_progress";
    }
    if (b.status === "in_progress" && b.outcome.type === "expired" && now >= b.createdAt + DAY_MS) {
      b.status = "expired";
      b.settledAt = b.createdAt + DAY_MS;
      writeFiles(
        b,
        [],
        notRunLines(
          b,
          "batch_expired",
          "This request could not be executed before the completion window expired.",
        ),
      );
      return;
    }
    if (b.status === "in_progress" && b.outcome.type !== "expired" && now >= b.finalizingAt)
      b.status = "finalizing";
    if (b.status === "finalizing" && now >= b.completedAt) {
      b.status = "completed";
      b.settledAt = b.completedAt;
      if (b.outcome.type === "no-result") return;
      const out: string[] = [];
      const err: string[] = [];
      for (const l of b.lines) {
        const r = resultLine(b, l);
        (r.file === "output" ? out : err).push(JSON.stringify(r.line));
      }
      writeFiles(b, out, err);
    }
  };

  const batchView = (b: FakeOpenAIBatch) => {
    const at = (ms: number | undefined) => (ms !== undefined ? clock.unixSeconds(ms) : null);
    const settled = b.status === "completed";
    const errors =
      b.status === "failed"
        ? {
            object: "list",
            data:
              b.validationErrors.length > 0
                ? b.validationErrors
                : ((b.outcome.type === "failed" ? b.outcome.errors : undefined) ?? []).map((e) => ({
                    line: null,
                    param: null,
                    ...e,
                  })),
          }
        : null;
    const outLines = b.outputFileId
      ? (files.get(b.outputFileId)?.content.split("\n").filter(Boolean).length ?? 0)
      : 0;
    const total = b.lines.length;
    return {
      id: b.id,
      object: "batch",
      endpoint: b.endpoint,
      model:
        typeof b.lines[0]?.body === "object" ? String((b.lines[0].body as { model?: unknown }).model) : null,
      errors,
      input_file_id: b.inputFileId,
      completion_window: "24h",
      status: b.status,
      output_file_id: b.outputFileId ?? null,
      error_file_id: b.errorFileId ?? null,
      created_at: at(b.createdAt),
      in_progress_at: b.status === "validating" || b.status === "failed" ? null : at(b.inProgressAt),
      expires_at: at(b.createdAt + DAY_MS),
      finalizing_at: settled ? at(b.finalizingAt) : null,
      completed_at: settled ? at(b.completedAt) : null,
      failed_at: b.status === "failed" ? at(b.settledAt) : null,
      expired_at: b.status === "expired" ? at(b.settledAt) : null,
      cancelling_at: at(b.cancellingAt),
      cancelled_at: b.status === "cancelled" ? at(b.settledAt) : null,
      request_counts: {
        total,
        completed: settled || b.status === "cancelled" || b.status === "expired" ? outLines : 0,
        failed: settled || b.status === "cancelled" || b.status === "expired" ? total - outLines : 0,
      },
      metadata: b.metadata,
    };
  };

  /**
   * One page of a list (GET /v1/batches newest first, GET /v1/files by `order`, default desc):
   * `after` is the last id of the previous page, `limit` 1..max; `{object: "list", data,
   * first_id, last_id, has_more}` as the API answers.
   */
  const listPage = <T extends { id: string }>(
    req: FakeRequest,
    items: T[],
    view: (item: T) => unknown,
    defaultLimit: number,
    maxLimit: number,
  ): FakeResponse => {
    const limit = Number(req.query.get("limit") ?? defaultLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
      return fail(400, `Invalid 'limit': integer below minimum value or above maximum value ${maxLimit}.`, {
        param: "limit",
      });
    }
    const after = req.query.get("after");
    const start = after === null ? 0 : items.findIndex((x) => x.id === after) + 1;
    const page = items.slice(start, start + limit);
    return {
      status: 200,
      json: {
        object: "list",
        data: page.map(view),
        first_id: page[0]?.id ?? null,
        last_id: page[page.length - 1]?.id ?? null,
        has_more: start + limit < items.length,
      },
    };
  };

  const handle = async (req: FakeRequest): Promise<FakeResponse> => {
    const auth = req.headers.authorization;
    if (auth !== `Bearer ${apiKey}`) {
      return fail(
        401,
        `Incorrect API key provided: ${(auth ?? "").replace(/^Bearer /, "").slice(0, 8)}***.`,
        {
          code: "invalid_api_key",
        },
      );
    }
    if (req.path === "/v1/files" && req.method === "POST") {
      const ct = req.headers["content-type"] ?? "";
      if (!ct.startsWith("multipart/form-data"))
        return fail(400, "Expected multipart/form-data", { param: "file" });
      const form = await new Request("http://fake/", {
        method: "POST",
        headers: { "content-type": ct },
        body: req.raw,
      }).formData();
      const purpose = form.get("purpose");
      const file = form.get("file");
      if (typeof purpose !== "string")
        return fail(400, "Missing required parameter: 'purpose'.", { param: "purpose" });
      if (!["assistants", "batch", "fine-tune", "vision", "user_data", "evals"].includes(purpose)) {
        return fail(400, `Invalid value for 'purpose': ${purpose}.`, { param: "purpose" });
      }
      if (file === null || typeof file === "string")
        return fail(400, "Missing required parameter: 'file'.", { param: "file" });
      const f = addFile((file as File).name, purpose, await (file as File).text());
      return { status: 200, json: fileView(f) };
    }
    if (req.path === "/v1/files" && req.method === "GET") {
      const purpose = req.query.get("purpose");
      const ascending = req.query.get("order") === "asc";
      const all = [...files.values()].filter(
        (f) => !f.deleted && (purpose === null || f.purpose === purpose),
      );
      return listPage(req, ascending ? all : all.reverse(), fileView, 10_000, 10_000);
    }
    if (req.path === "/v1/batches" && req.method === "GET") {
      const all = [...batches.values()].reverse();
      for (const b of all) tick(b);
      return listPage(req, all, batchView, 20, 100);
    }
    const fm = /^\/v1\/files\/([^/]+)(\/content)?$/.exec(req.path);
    if (fm !== null) {
      const f = files.get(fm[1] as string);
      if (f === undefined || f.deleted) return fail(404, `No such File object: ${fm[1]}`, { param: "id" });
      if (fm[2] === "/content" && req.method === "GET") {
        return { status: 200, text: f.content, headers: { "content-type": "application/octet-stream" } };
      }
      if (fm[2] === undefined && req.method === "GET") return { status: 200, json: fileView(f) };
      if (fm[2] === undefined && req.method === "DELETE") {
        f.deleted = true;
        return { status: 200, json: { id: f.id, object: "file", deleted: true } };
      }
      return fail(405, "Method not allowed");
    }
    if (req.path === "/v1/batches" && req.method === "POST") {
      const body = (req.json ?? {}) as Record<string, unknown>;
      const unknown = Object.keys(body).find((k) => !CREATE_BATCH_FIELDS.has(k));
      if (unknown !== undefined) return fail(400, `Unrecognized request argument supplied: ${unknown}`);
      if (typeof body.input_file_id !== "string")
        return fail(400, "Missing required parameter: 'input_file_id'.", { param: "input_file_id" });
      if (body.endpoint !== "/v1/responses" && body.endpoint !== "/v1/chat/completions") {
        return fail(400, `Invalid value for 'endpoint': ${String(body.endpoint)}.`, { param: "endpoint" });
      }
      if (body.completion_window !== "24h") {
        return fail(
          400,
          `Invalid value for 'completion_window': ${String(body.completion_window)}. Supported values are: '24h'.`,
          { param: "completion_window" },
        );
      }
      const input = files.get(body.input_file_id);
      if (input === undefined || input.deleted)
        return fail(400, `Invalid 'input_file_id': '${body.input_file_id}'. No such file.`, {
          param: "input_file_id",
        });
      if (input.purpose !== "batch")
        return fail(400, `Invalid 'input_file_id': file purpose must be 'batch'.`, {
          param: "input_file_id",
        });
      const { lines, errors } = parseInput(input.content, body.endpoint);
      const script = queue.shift() ?? { outcome: { type: "succeeded" } as OpenAIOutcome };
      const created = clock.nowMs;
      const finalizingAt = created + Math.max(script.processingMs ?? processingMs, validatingMs);
      const b: FakeOpenAIBatch = {
        id: nextBatch(),
        status: "validating",
        inputFileId: input.id,
        endpoint: body.endpoint,
        metadata: (body.metadata as Record<string, string> | undefined) ?? null,
        createdAt: created,
        inProgressAt: created + validatingMs,
        finalizingAt,
        completedAt: finalizingAt + finalizingMs,
        outcome: script.outcome,
        lines,
        validationErrors: errors,
      };
      batches.set(b.id, b);
      return { status: 200, json: batchView(b) };
    }
    const bm = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(req.path);
    if (bm !== null) {
      const b = batches.get(bm[1] as string);
      if (b === undefined) return fail(404, `No batch found with id '${bm[1]}'.`, { param: "batch_id" });
      tick(b);
      if (bm[2] === "/cancel" && req.method === "POST") {
        if (["completed", "failed", "expired", "cancelled"].includes(b.status)) {
          return fail(409, `Cannot cancel a batch with status '${b.status}'.`);
        }
        if (b.status !== "cancelling") {
          b.status = "cancelling";
          b.cancellingAt = clock.nowMs;
          b.cancelledAt = clock.nowMs + cancelMs;
        }
        return { status: 200, json: batchView(b) };
      }
      if (bm[2] === undefined && req.method === "GET") return { status: 200, json: batchView(b) };
      return fail(405, "Method not allowed");
    }
    return fail(404, `Invalid URL (${req.method} ${req.path})`);
  };

  const server = await startFakeServer({
    clock,
    errorBody: (s, m) => openaiError(s, m),
    handle,
    host: options.host,
  });
  return {
    url: `${server.origin}/v1`,
    apiKey,
    requests: server.requests,
    batches,
    files,
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
      const now = clock.nowMs;
      if (b.status === "cancelling") b.cancelledAt = now;
      else if (b.outcome.type === "expired") b.createdAt = Math.min(b.createdAt, now - DAY_MS);
      else {
        b.inProgressAt = Math.min(b.inProgressAt, now);
        b.finalizingAt = Math.min(b.finalizingAt, now);
        b.completedAt = Math.min(b.completedAt, now);
      }
      b.inProgressAt = Math.min(b.inProgressAt, now);
      tick(b);
    },
    inject: server.inject,
    clearFaults: server.clearFaults,
    close: server.close,
  };
}

function parseInput(content: string, endpoint: string) {
  const lines: Record<string, unknown>[] = [];
  const errors: FakeOpenAIBatch["validationErrors"] = [];
  const seen = new Set<unknown>();
  for (const [i, text] of content.split("\n").entries()) {
    if (text.trim() === "") continue;
    const n = i + 1;
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text);
    } catch {
      errors.push({
        code: "invalid_json_line",
        message: "This line is not parseable as valid JSON.",
        line: n,
        param: null,
      });
      continue;
    }
    if (typeof line.custom_id !== "string") {
      errors.push({
        code: "missing_required_parameter",
        message: "Missing required parameter: 'custom_id'.",
        line: n,
        param: "custom_id",
      });
    } else if (seen.has(line.custom_id)) {
      errors.push({
        code: "duplicate_custom_id",
        message: "The custom_id for this request is a duplicate of another request.",
        line: n,
        param: "custom_id",
      });
    }
    seen.add(line.custom_id);
    if (line.method !== "POST")
      errors.push({
        code: "invalid_value",
        message: "Invalid value for 'method'. Only 'POST' is supported.",
        line: n,
        param: "method",
      });
    if (line.url !== endpoint) {
      errors.push({
        code: "mismatched_endpoint",
        message: `The provided URL '${String(line.url)}' does not match the batch endpoint '${endpoint}'.`,
        line: n,
        param: "url",
      });
    }
    if (typeof line.body !== "object" || line.body === null) {
      errors.push({
        code: "missing_required_parameter",
        message: "Missing required parameter: 'body'.",
        line: n,
        param: "body",
      });
    }
    lines.push(line);
  }
  if (lines.length === 0 && errors.length === 0) {
    errors.push({ code: "empty_file", message: "The batch input file is empty.", line: null, param: null });
  }
  return { lines, errors };
}

interface LineRefusal {
  status: number;
  message: string;
  param: string | null;
  code: string;
}

/**
 * What POST /v1/responses refuses, as the batch reports it (a line in the error file): an unknown
 * (misspelt) parameter, an unknown model, max_output_tokens outside 16..the model's limit, and a
 * strict json_schema the API does not accept.
 */
function lineProblem(
  body: Record<string, unknown>,
  models: Readonly<Record<string, number>>,
): LineRefusal | undefined {
  const unknown = Object.keys(body).find((k) => !RESPONSE_FIELDS.has(k));
  if (unknown !== undefined) {
    return {
      status: 400,
      message: `Unknown parameter: '${unknown}'.`,
      param: unknown,
      code: "unknown_parameter",
    };
  }
  const model = String(body.model);
  const limit = models[model];
  if (limit === undefined) {
    return {
      status: 404,
      message: `The model '${model}' does not exist or you do not have access to it.`,
      param: "model",
      code: "model_not_found",
    };
  }
  const max = body.max_output_tokens;
  if (typeof max === "number" && max < 16) {
    return {
      status: 400,
      message: `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${max} instead.`,
      param: "max_output_tokens",
      code: "integer_below_min_value",
    };
  }
  if (typeof max === "number" && max > limit) {
    return {
      status: 400,
      message: `max_output_tokens is too large: ${max}. This model supports at most ${limit} output tokens, whereas you provided ${max}.`,
      param: "max_output_tokens",
      code: "invalid_value",
    };
  }
  const format = (body.text as { format?: Record<string, unknown> } | undefined)?.format;
  if (format !== undefined) {
    const bad = Object.keys(format).find(
      (k) => !["type", "name", "schema", "strict", "description"].includes(k),
    );
    if (bad !== undefined) {
      return {
        status: 400,
        message: `Unknown parameter: 'text.format.${bad}'.`,
        param: `text.format.${bad}`,
        code: "unknown_parameter",
      };
    }
  }
  const schemaProblem = strictSchemaProblem(body);
  if (schemaProblem !== undefined) {
    return { status: 400, message: schemaProblem, param: "text.format.schema", code: "invalid_json_schema" };
  }
  return undefined;
}

/** Strict structured outputs: every object sets additionalProperties: false and requires all its properties. */
function strictSchemaProblem(body: Record<string, unknown>): string | undefined {
  const format = (body.text as { format?: Record<string, unknown> } | undefined)?.format;
  if (format?.type !== "json_schema" || format.strict !== true) return undefined;
  const name = String(format.name);
  const root = format.schema as Record<string, unknown> | undefined;
  if (root?.type !== "object") {
    return `Invalid schema for response_format '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(root?.type)}"'.`;
  }
  const walk = (schema: unknown, context: string): string | undefined => {
    if (typeof schema !== "object" || schema === null) return undefined;
    const s = schema as Record<string, unknown>;
    const unsupported = STRICT_UNSUPPORTED.find((k) => k in s);
    if (unsupported !== undefined) {
      return `Invalid schema for response_format '${name}': In context=(${context}), '${unsupported}' is not permitted.`;
    }
    if (s.type === "object" || s.properties !== undefined) {
      if (s.additionalProperties !== false) {
        return `Invalid schema for response_format '${name}': In context=(${context}), 'additionalProperties' is required to be supplied and to be false.`;
      }
      const props = Object.keys((s.properties as object | undefined) ?? {});
      const required = Array.isArray(s.required) ? s.required : [];
      const missing = props.find((p) => !required.includes(p));
      if (missing !== undefined) {
        return `Invalid schema for response_format '${name}': In context=(${context}), 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
      }
      for (const p of props) {
        const r = walk(
          (s.properties as Record<string, unknown>)[p],
          context ? `${context}, 'properties', '${p}'` : `'properties', '${p}'`,
        );
        if (r) return r;
      }
    }
    if (s.items !== undefined) return walk(s.items, context ? `${context}, 'items'` : "'items'");
    return undefined;
  };
  return walk(format.schema, "");
}
