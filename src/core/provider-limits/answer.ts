/**
 * What a model provider answered when a call failed, and whether waiting can help
 * (docs/provider-limits.md#recognising-a-limit). Pure: every vendor's reader (the CLIs' lines, the
 * batch APIs' errors) ends here, so one table decides retryable against permanent for all of them.
 *
 * Retryable: 429 (a rate limit), 529 and 503 (overloaded), 408, 500, 502, 504 and any other 5xx,
 * and no answer at all (a dropped connection or stream, status 0). Permanent: every other 4xx
 * (401, 403, 400, an unknown model, a context too long) and a 429 or 402 that says the quota for
 * the billing period is used up, which no wait within a run can fix.
 */

/** The provider an answer came from: the API family the CLI talks to. */
export type ProviderName = "anthropic" | "openai" | "gemini" | (string & {});

export type AnswerKind =
  | "rate_limited"
  | "overloaded"
  | "server_error"
  | "connection"
  | "unauthorized"
  | "forbidden"
  | "unknown_model"
  | "context_too_long"
  | "quota_exhausted"
  | "bad_request";

export interface ProviderAnswer {
  provider: ProviderName;
  /** The HTTP status; 0 when no HTTP answer came (a dropped connection, an unreachable endpoint). */
  status: number;
  kind: AnswerKind;
  /** True when the same call may pass after a wait (docs/provider-limits.md#recognising-a-limit). */
  retryable: boolean;
  /** The wait the provider asked for (retry-after, RetryInfo), in seconds, when the line carries it. */
  retryAfterSeconds?: number;
  /** The provider's (or the CLI's) words, as the line gave them. */
  message: string;
}

const RETRYABLE_KINDS: ReadonlySet<AnswerKind> = new Set([
  "rate_limited",
  "overloaded",
  "server_error",
  "connection",
]);

/** A quota for the billing period (or the day) that is used up: no wait within a run helps. */
const QUOTA_EXHAUSTED =
  /insufficient_quota|exceeded your current quota|quota exceeded\. check your plan|credit balance is too low|exhausted your daily quota|billing|hit your usage limit|out of credits/i;
/** The request is larger than the model's context window. */
const CONTEXT_TOO_LONG =
  /prompt is too long|context window|context_length_exceeded|maximum context length|too many tokens|input token count.*exceeds|request too large|exceeds the maximum number of tokens/i;
/** The model does not exist or the key may not use it. */
const UNKNOWN_MODEL =
  /model_not_found|model .*does not exist|issue with the selected model|model not found|unknown model/i;

/** The kind of an HTTP status (0: no answer), refined by what the message says. */
export function answerKind(status: number, message: string): AnswerKind {
  if (status === 0) return "connection";
  if (status === 402) return "quota_exhausted";
  if (status === 429) return QUOTA_EXHAUSTED.test(message) ? "quota_exhausted" : "rate_limited";
  if (status === 529 || status === 503) return "overloaded";
  if (status === 408 || status >= 500) return "server_error";
  if (status === 401) return "unauthorized";
  if (status === 403) return QUOTA_EXHAUSTED.test(message) ? "quota_exhausted" : "forbidden";
  if (status === 404) return "unknown_model";
  if (status === 413 || CONTEXT_TOO_LONG.test(message)) return "context_too_long";
  if (QUOTA_EXHAUSTED.test(message)) return "quota_exhausted";
  if (UNKNOWN_MODEL.test(message)) return "unknown_model";
  return "bad_request";
}

/** An answer from its status and words; `retryAfterSeconds` only when the provider gave one. */
export function providerAnswer(
  provider: ProviderName,
  status: number,
  message: string,
  retryAfterSeconds?: number,
): ProviderAnswer {
  const kind = answerKind(status, message);
  const retryable = RETRYABLE_KINDS.has(kind);
  return {
    provider,
    status,
    kind,
    retryable,
    ...(retryable && retryAfterSeconds !== undefined && Number.isFinite(retryAfterSeconds)
      ? { retryAfterSeconds: Math.max(0, Math.ceil(retryAfterSeconds)) }
      : {}),
    message,
  };
}

/** An HTTP status read from text the CLI printed, when it is one a provider answers (400–599). */
export function httpStatus(value: unknown): number | undefined {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined;
}

/** `retry-after` (seconds or an HTTP date) or `retry-after-ms`, as the headers gave them. */
export function retryAfterHeader(
  headers: Readonly<Record<string, unknown>>,
  now: number,
): number | undefined {
  const ms = headers["retry-after-ms"];
  if (typeof ms === "string" && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms) / 1000;
  const value = headers["retry-after"];
  if (typeof value !== "string") return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}
