/**
 * Client of the controller's realtime prompt API (docs/prompt-api.md):
 * `prompt` and `close`, each answer either the documented 202 body or a typed error. A 503 (the
 * session is not serving yet, or its pod cannot be reached) is retried after the server's
 * Retry-After, a bounded number of times; every other status is final.
 */
import { setTimeout as sleepMs } from "node:timers/promises";
import { parseRetryAfter } from "../kube/errors.js";
import { PromptApiError, PromptUnavailableError, promptApiError } from "./errors.js";

export interface PromptReply {
  /** The prompt's turn number, from 1 across the session. */
  turn: number;
  /** Prompts waiting, this one included. */
  queued: number;
  /** The agent's session id once known, else "". */
  sessionId: string;
}

export interface CloseReply {
  queued: number;
}

export interface PromptApiClientOptions {
  /** e.g. `http://agent-controller-api.ai-agents.svc:8082`; a trailing slash is ignored. */
  baseUrl: string;
  /** The `api-token` key of the agent-realtime Secret. */
  token: string;
  /** Retries after a 503 (default 3); 0 throws the first 503. */
  maxRetries?: number;
  /** Wait when a 503 carries no readable Retry-After (default 2000 ms, the server's value). */
  defaultRetryAfterMs?: number;
  /** Upper bound of one wait, whatever the server asks (default 30000 ms). */
  maxRetryAfterMs?: number;
  /** Injected for tests; global fetch by default. */
  fetch?: typeof fetch;
  /** Injected for tests; a timer by default. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const defaultSleep = async (ms: number, signal?: AbortSignal) => {
  await sleepMs(ms, undefined, signal ? { signal } : undefined);
};

export class PromptApiClient {
  private readonly baseUrl: string;
  private readonly maxRetries: number;
  private readonly defaultRetryAfterMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly fetch: typeof fetch;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly opts: PromptApiClientOptions) {
    if (!opts.baseUrl) throw new Error("PromptApiClient: baseUrl is empty");
    if (!opts.token) throw new Error("PromptApiClient: token (the agent-realtime api-token) is empty");
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.maxRetries = Math.max(0, opts.maxRetries ?? 3);
    this.defaultRetryAfterMs = opts.defaultRetryAfterMs ?? 2000;
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 30_000;
    this.fetch = opts.fetch ?? fetch;
    this.sleep = opts.sleep ?? defaultSleep;
  }

  /** Queues `text` as the next turn of the realtime session of Agent `name`. */
  async prompt(namespace: string, name: string, text: string, signal?: AbortSignal): Promise<PromptReply> {
    const body = await this.post(namespace, name, "prompt", JSON.stringify({ prompt: text }), signal);
    if (
      isRecord(body) &&
      Number.isInteger(body.turn) &&
      Number.isInteger(body.queued) &&
      typeof body.sessionId === "string"
    ) {
      return { turn: body.turn as number, queued: body.queued as number, sessionId: body.sessionId };
    }
    throw new PromptApiError(
      202,
      `unexpected body ${JSON.stringify(body)}`,
      this.what(namespace, name, "prompt"),
    );
  }

  /** Stops new prompts; the queued turns still run, then the session ends. */
  async close(namespace: string, name: string, signal?: AbortSignal): Promise<CloseReply> {
    const body = await this.post(namespace, name, "close", undefined, signal);
    if (isRecord(body) && Number.isInteger(body.queued)) return { queued: body.queued as number };
    throw new PromptApiError(
      202,
      `unexpected body ${JSON.stringify(body)}`,
      this.what(namespace, name, "close"),
    );
  }

  private what(namespace: string, name: string, action: string): string {
    return `POST ${this.path(namespace, name, action)}`;
  }

  private path(namespace: string, name: string, action: string): string {
    return `/v1/namespaces/${encodeURIComponent(namespace)}/agents/${encodeURIComponent(name)}/${action}`;
  }

  private async post(
    namespace: string,
    name: string,
    action: "prompt" | "close",
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const what = this.what(namespace, name, action);
    const url = `${this.baseUrl}${this.path(namespace, name, action)}`;
    for (let attempt = 1; ; attempt++) {
      const res = await this.fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${this.opts.token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body }),
        ...(signal ? { signal } : {}),
      });
      const text = await res.text();
      if (res.status === 202) return parseJson(text);
      const message = errorMessage(text);
      if (res.status !== 503) throw promptApiError(res.status, message, what);
      const retryAfterMs = parseRetryAfter(res.headers.get("retry-after") ?? undefined, Date.now());
      if (attempt > this.maxRetries) {
        throw new PromptUnavailableError(503, message, what, retryAfterMs, attempt);
      }
      await this.sleep(Math.min(retryAfterMs ?? this.defaultRetryAfterMs, this.maxRetryAfterMs), signal);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The `error` of an `{"error": …}` body; otherwise the body itself, shortened. */
function errorMessage(text: string): string {
  const body = parseJson(text);
  if (isRecord(body) && typeof body.error === "string") return body.error;
  const trimmed = text.trim();
  return trimmed === "" ? "(empty body)" : trimmed.slice(0, 300);
}
