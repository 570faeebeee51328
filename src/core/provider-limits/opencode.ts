/**
 * The provider's answer on an `opencode run --format json` line (docs/provider-limits.md#opencode).
 * Pure.
 *
 * opencode gives up with one `error` line: `error.name` `APIError` and `data` holding the
 * provider's `message`, its `statusCode`, opencode's own `isRetryable`, the `responseHeaders`
 * (`retry-after` among them) and the body; without `statusCode` when no answer came (`Cannot
 * connect to API: …`, a dropped stream). Other error names (a missing key, an unknown model in its
 * catalog) are opencode's own failures, not the provider's answer, except `ContextOverflowError`:
 * the provider's 400 for a request larger than the model's context (opencode drops its status).
 */
import type { JsonLine } from "../cli/vendors.js";
import {
  httpStatus,
  type ProviderAnswer,
  type ProviderName,
  providerAnswer,
  retryAfterHeader,
} from "./answer.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** opencode's provider id (the model's `<provider>/` prefix) as the API family. */
export function opencodeProvider(model: string): ProviderName {
  const id =
    model
      .replace(/^opencode\//i, "")
      .split("/")[0]
      ?.toLowerCase() ?? "";
  if (id === "google") return "gemini";
  return id === "" ? "anthropic" : id;
}

export function opencodeAnswer(line: JsonLine, provider: ProviderName, now = 0): ProviderAnswer | undefined {
  if (line.type !== "error" || !isObject(line.error)) return undefined;
  const data = isObject(line.error.data) ? line.error.data : {};
  const message = typeof data.message === "string" ? data.message : "";
  if (line.error.name === "ContextOverflowError") return providerAnswer(provider, 400, message);
  if (line.error.name !== "APIError") return undefined;
  const status = httpStatus(data.statusCode);
  if (status === undefined && data.isRetryable !== true) return undefined;
  const headers = isObject(data.responseHeaders) ? data.responseHeaders : {};
  const lineTime = typeof line.timestamp === "number" ? line.timestamp : now;
  return providerAnswer(provider, status ?? 0, message, retryAfterHeader(headers, lineTime));
}
