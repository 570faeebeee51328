/**
 * A local Gemini API (generativelanguage v1beta) for the real gemini CLI: the model calls it makes
 * and what Google answers (Google's Gemini API reference for generateContent, docs/agent-clis.md#gemini).
 *
 * - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` is the chat call: each one
 *   consumes a script step and answers `data:` chunks of GenerateContentResponse (`candidates[0]
 *   .content.parts[]` with `text` or `functionCall {name, args}`, `finishReason` and
 *   `usageMetadata` on the last chunk, `modelVersion` = the model in the path).
 * - `POST …:generateContent` is the CLI's utility call (the auto-routing classifier, loop
 *   detection, next-speaker check): it does not consume a step; it answers one candidate whose text
 *   is a JSON value shaped by `generationConfig.responseJsonSchema` (or "Done." without a schema).
 * - `POST …:countTokens` answers `{totalTokens}` estimated from the request's text.
 * - Errors use Google's envelope `{"error":{"code","message","status"}}`; `retryAfterSeconds`
 *   adds a `google.rpc.RetryInfo` detail (the CLI's quota classifier reads `retryDelay`).
 *
 * Give the CLI `origin` as GOOGLE_GEMINI_BASE_URL. Credential headers are journaled as a flag.
 */
import type { ServerResponse } from "node:http";
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

const MODEL_PATH = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/;

/** Google's canonical status names and default messages for the HTTP codes a script can return. */
const GOOGLE_STATUS: Readonly<Record<number, { status: string; message: string }>> = {
  400: { status: "INVALID_ARGUMENT", message: "Request contains an invalid argument." },
  401: {
    status: "UNAUTHENTICATED",
    message:
      "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
  },
  403: { status: "PERMISSION_DENIED", message: "The caller does not have permission" },
  404: { status: "NOT_FOUND", message: "Requested entity was not found." },
  429: { status: "RESOURCE_EXHAUSTED", message: "Resource has been exhausted (e.g. check quota)." },
  500: {
    status: "INTERNAL",
    message:
      "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  },
  503: { status: "UNAVAILABLE", message: "The model is overloaded. Please try again later." },
  504: { status: "DEADLINE_EXCEEDED", message: "Deadline expired before operation could complete." },
};

/** The model id in a model-call path, e.g. `gemini-2.5-pro`; undefined for other paths. */
export function modelOfPath(path: string): string | undefined {
  return MODEL_PATH.exec(path)?.[1];
}

function methodOfPath(path: string): string | undefined {
  return MODEL_PATH.exec(path)?.[2];
}

/** usageMetadata as Google reports it: promptTokenCount includes the cached part. */
export function usageMetadata(usage: ModelUsage | undefined, answer: string): Record<string, number> {
  const cached = usage?.cacheRead ?? 0;
  const prompt = (usage?.input ?? 10) + cached;
  const candidates = usage?.output ?? Math.max(1, Math.ceil(answer.length / 4));
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
    totalTokenCount: prompt + candidates,
  };
}

/** The Google error envelope for an HTTP status (google.rpc.Status under `error`). */
export function googleError(
  status: number,
  message?: string,
  statusName?: string,
  retryAfterSeconds?: number,
  quotaId?: string,
): { error: { code: number; message: string; status: string; details?: unknown[] } } {
  const known = GOOGLE_STATUS[status] ?? { status: "UNKNOWN", message: "Unknown error." };
  const details = [
    ...(quotaId !== undefined
      ? [{ "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaId }] }]
      : []),
    ...(retryAfterSeconds !== undefined
      ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retryAfterSeconds}s` }]
      : []),
  ];
  return {
    error: {
      code: status,
      message: message ?? known.message,
      status: statusName ?? known.status,
      ...(details.length > 0 ? { details } : {}),
    },
  };
}

function candidate(parts: unknown[], finishReason?: string): Record<string, unknown> {
  return { content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}), index: 0 };
}

let responseCounter = 0;

function chunk(model: string, cand: Record<string, unknown>, usage?: Record<string, number>): unknown {
  responseCounter += 1;
  return {
    candidates: [cand],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: model,
    responseId: `fake-gemini-${responseCounter}`,
  };
}

/** Text split in two chunks (so the CLI sees a real stream), the last with finishReason and usage. */
function streamText(res: ServerResponse, model: string, text: string, usage: ModelUsage | undefined): void {
  const cut = Math.ceil(text.length / 2);
  const first = text.slice(0, cut);
  const rest = text.slice(cut);
  if (first !== "") sse(res, chunk(model, candidate([{ text: first }])));
  sse(res, chunk(model, candidate([{ text: rest }], "STOP"), usageMetadata(usage, text)));
}

function respondStream(step: ModelStep, model: string, res: ServerResponse): void {
  if ("error" in step) {
    const { status, message, type, quotaId } = step.error;
    res.writeHead(status, { "content-type": "application/json; charset=UTF-8" });
    res.end(JSON.stringify(googleError(status, message, type, step.retryAfterSeconds, quotaId)));
    return;
  }
  if ("stall" in step) {
    startSse(res);
    return;
  }
  if ("cut" in step) {
    startSse(res);
    if (step.text) sse(res, chunk(model, candidate([{ text: step.text }])));
    // Let the chunk reach the client before the connection drops.
    setTimeout(() => cutConnection(res), 20);
    return;
  }
  startSse(res);
  if ("toolCall" in step) {
    const parts: unknown[] = [];
    if (step.text) parts.push({ text: step.text });
    parts.push({ functionCall: { name: step.toolCall.name, args: step.toolCall.input } });
    sse(res, chunk(model, candidate(parts, "STOP"), usageMetadata(step.usage, step.text ?? "")));
  } else {
    streamText(res, model, step.text, step.usage);
  }
  res.end();
}

type Schema = Readonly<Record<string, unknown>>;

/** A value that satisfies a (Gemini-flavoured, upper- or lower-case typed) JSON schema. */
export function valueForSchema(schema: Schema | undefined): unknown {
  if (schema === undefined) return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = String(schema.type ?? "object").toLowerCase();
  switch (type) {
    case "object": {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, valueForSchema(v)]));
    }
    case "array":
      return [];
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return false;
    default:
      return "Done.";
  }
}

function generationSchema(body: unknown): Schema | undefined {
  const gen = (body as { generationConfig?: Record<string, unknown> } | undefined)?.generationConfig;
  const schema = gen?.responseJsonSchema ?? gen?.responseSchema;
  return typeof schema === "object" && schema !== null ? (schema as Schema) : undefined;
}

function allText(body: unknown): string {
  return JSON.stringify((body as { contents?: unknown } | undefined)?.contents ?? "");
}

const geminiApi: ModelApi = {
  isModelCall: (method, path) => method === "POST" && methodOfPath(path) === "streamGenerateContent",
  respond(step, req, res) {
    respondStream(step, modelOfPath(req.path) ?? "gemini", res);
  },
  other(req, path, res, body) {
    const method = methodOfPath(path);
    if (req.method !== "POST" || method === undefined) return false;
    res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
    if (method === "countTokens") {
      res.end(JSON.stringify({ totalTokens: Math.ceil(allText(body).length / 4) }));
      return true;
    }
    const schema = generationSchema(body);
    const text = schema ? JSON.stringify(valueForSchema(schema)) : "Done.";
    res.end(
      JSON.stringify(
        chunk(modelOfPath(path) ?? "gemini", candidate([{ text }], "STOP"), usageMetadata(undefined, text)),
      ),
    );
    return true;
  },
};

export type GeminiServer = ModelServer;

export function startGeminiServer(host?: string): Promise<GeminiServer> {
  return startModelServer(geminiApi, host);
}

/** One turn of the history a request carried, flattened for assertions. */
export interface GeminiTurn {
  role: string;
  text: string;
  functionCalls: string[];
  functionResponses: string[];
}

/** The `contents` a chat request sent (the whole conversation so far, as the CLI replays it). */
export function geminiHistory(entry: JournalEntry): GeminiTurn[] {
  const contents = (entry.body as { contents?: unknown } | undefined)?.contents;
  if (!Array.isArray(contents)) return [];
  return contents.map((c: { role?: string; parts?: Record<string, unknown>[] }) => {
    const parts = Array.isArray(c.parts) ? c.parts : [];
    return {
      role: c.role ?? "",
      text: parts
        .filter((p) => typeof p.text === "string" && p.thought !== true)
        .map((p) => p.text)
        .join(""),
      functionCalls: parts.flatMap((p) =>
        p.functionCall ? [(p.functionCall as { name: string }).name] : [],
      ),
      functionResponses: parts.flatMap((p) =>
        p.functionResponse ? [(p.functionResponse as { name: string }).name] : [],
      ),
    };
  });
}

/** The function declarations a chat request offered the model (the CLI's own tools). */
export function offeredTools(entry: JournalEntry): string[] {
  const tools = (entry.body as { tools?: { functionDeclarations?: { name: string }[] }[] } | undefined)
    ?.tools;
  return (tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
}
