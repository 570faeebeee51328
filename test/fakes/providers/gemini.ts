/**
 * A fake Gemini Batch API (providers/gemini.md): x-goog-api-key (or ?key=) check, the Google
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
}

export interface FakeGeminiOptions {
  apiKey?: string;
  /** Virtual ms a batch stays PENDING (1 s). */
  pendingMs?: number;
  /** Default virtual ms from creation to the end state (60 s; expired: 48 h). */
  processingMs?: number;
  /** Virtual ms a cancelled batch takes to reach CANCELLED (0: at once). */
  cancelMs?: number;
  /** The @type package seen in real payloads. */
  typePackage?: string;
  clock?: FakeClock;
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

export async function startFakeGemini(options: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const apiKey = options.apiKey ?? "test-gemini-key";
  const pendingMs = options.pendingMs ?? 1_000;
  const processingMs = options.processingMs ?? 60_000;
  const cancelMs = options.cancelMs ?? 0;
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
      const problem = validateCreate(req.json);
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
      b.endsAt = Math.min(b.endsAt, clock.nowMs + cancelMs);
      tick(b);
      return { status: 200, json: {} };
    }
    if (req.method === "GET") return { status: 200, json: operation(b) };
    if (req.method === "DELETE") {
      // Delete does not cancel; the client is simply no longer interested in the batch.
      b.deleted = true;
      return { status: 200, json: {} };
    }
    return fail(404, "Method not found.", "NOT_FOUND");
  };

  const server = await startFakeServer({ clock, errorBody: (s, msg) => googleError(s, msg), handle });
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
