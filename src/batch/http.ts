/**
 * The one HTTP adapter every vendor client uses: undici fetch with a per-request timeout,
 * vendor auth headers, and every non-2xx answer or transport failure turned into a
 * BatchProviderError carrying the status and retry-after.
 */
import { type FormData, fetch } from "undici";
import { BatchProviderError } from "./provider.js";

export const DEFAULT_TIMEOUT_MS = 30_000;

/** What every vendor client takes: tests inject the fake server's URL here. */
export interface ProviderClientOptions {
  baseUrl?: string;
  timeoutMs?: number;
}

export interface HttpClientOptions {
  /** Vendor label used in error messages. */
  vendor: string;
  /** Prefix for relative paths, without a trailing slash. */
  baseUrl: string;
  timeoutMs?: number;
  /** Turns a parsed error body into "type: message"; undefined when it has no recognisable shape. */
  describeError: (body: unknown) => string | undefined;
}

/** The HTTP client of one vendor's batch API: all three share the `{error: {type, message}}` envelope reading. */
export function vendorHttpClient(
  vendor: string,
  baseUrl: string,
  options: ProviderClientOptions,
): HttpClient {
  return new HttpClient({
    vendor,
    baseUrl,
    timeoutMs: options.timeoutMs,
    describeError: describeErrorEnvelope,
  });
}

export interface HttpRequest {
  method: "GET" | "POST" | "DELETE";
  /** Relative to baseUrl, or an absolute URL (Anthropic's results_url). */
  path: string;
  headers: Record<string, string>;
  json?: unknown;
  form?: FormData;
  /** Statuses returned to the caller instead of thrown (404 during cleanup). */
  passStatuses?: readonly number[];
}

export interface HttpResponse {
  status: number;
  text: string;
}

export class HttpClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: HttpClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  url(path: string): string {
    return /^https?:\/\//.test(path) ? path : `${this.baseUrl}${path}`;
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    const url = this.url(req.path);
    const what = `${this.options.vendor} ${req.method} ${describePath(url)}`;
    const headers: Record<string, string> = { ...req.headers };
    let body: string | FormData | undefined;
    if (req.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(req.json);
    } else if (req.form !== undefined) {
      body = req.form;
    }
    let status: number;
    let text: string;
    let retryAfter: number | undefined;
    try {
      const res = await fetch(url, {
        method: req.method,
        headers,
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = res.status;
      retryAfter = parseRetryAfter(res.headers.get("retry-after-ms"), res.headers.get("retry-after"));
      text = await res.text();
    } catch (err) {
      const e = new BatchProviderError(`${what}: request failed: ${transportMessage(err, this.timeoutMs)}`);
      e.mayHaveActed = !neverSent(err);
      throw e;
    }
    if ((status >= 200 && status < 300) || req.passStatuses?.includes(status)) return { status, text };
    const detail = this.options.describeError(safeParse(text));
    const e = new BatchProviderError(
      `${what}: HTTP ${status}${detail ? `: ${detail}` : ""}`,
      status,
      retryAfter,
    );
    // A server error or a gateway's may come after the work was done; a throttle (429, 503, 529) refuses before it.
    e.mayHaveActed = ACTED_MAYBE_STATUSES.has(status);
    throw e;
  }

  /** send + JSON.parse; an unreadable 2xx body is a BatchProviderError like any other poll error. */
  async json(req: HttpRequest): Promise<{ status: number; body: unknown }> {
    const res = await this.send(req);
    if (res.status < 200 || res.status >= 300) return { status: res.status, body: safeParse(res.text) };
    try {
      return { status: res.status, body: JSON.parse(res.text) };
    } catch {
      const e = new BatchProviderError(
        `${this.options.vendor} ${req.method} ${describePath(this.url(req.path))}: response is not JSON`,
        res.status,
      );
      // A 2xx came back: the provider did act, only its answer is unreadable.
      e.mayHaveActed = true;
      throw e;
    }
  }
}

function describePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const ACTED_MAYBE_STATUSES = new Set([500, 502, 504]);

/** Failures before the request could reach the provider: no connection was ever made. */
const NOT_CONNECTED_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function neverSent(err: unknown): boolean {
  const cause = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  const code = cause instanceof Error ? (cause as { code?: unknown }).code : undefined;
  return typeof code === "string" && NOT_CONNECTED_CODES.has(code);
}

function transportMessage(err: unknown, timeoutMs: number): string {
  if (err instanceof Error) {
    if (err.name === "TimeoutError" || err.name === "AbortError") return `timed out after ${timeoutMs} ms`;
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) return `${err.message} (${cause.message})`;
    return err.message;
  }
  return String(err);
}

/** retry-after-ms wins (Anthropic SDK convention); retry-after is seconds or an HTTP date. */
export function parseRetryAfter(
  ms: string | null,
  value: string | null,
  now: number = Date.now(),
): number | undefined {
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms) / 1000);
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const date = Date.parse(v);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** Reads error.type/status and error.message from the Anthropic, Google and OpenAI envelopes. */
export function describeErrorEnvelope(body: unknown): string | undefined {
  if (!isRecord(body) || !isRecord(body.error)) return undefined;
  const e = body.error;
  const kind = typeof e.type === "string" ? e.type : typeof e.status === "string" ? e.status : undefined;
  const message = typeof e.message === "string" ? e.message : undefined;
  if (kind && message) return `${kind}: ${message}`;
  return kind ?? message;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
