/**
 * The provider's answer on a claude stream-json line (docs/provider-limits.md#claude). Pure.
 *
 * - A failed API call ends with a `result` line, `is_error: true`, `terminal_reason` `api_error`
 *   (`prompt_too_long` for a context too long), `api_error_status` (null when no answer came:
 *   `api_error: "connection_failed"` for a dropped connection) and the CLI's message in `result`.
 * - Before each of its own retries the CLI prints `system`/`api_retry` with `error_status` (null
 *   for a dropped stream): the last word of a CLI stopped while still retrying.
 *
 * The CLI honours `retry-after` in its own retries but prints no header: its answers carry none.
 */
import type { JsonLine } from "../cli/vendors.js";
import { httpStatus, type ProviderAnswer, providerAnswer } from "./answer.js";

const text = (v: unknown): string => (typeof v === "string" ? v : "");

export function claudeAnswer(line: JsonLine): ProviderAnswer | undefined {
  if (line.type === "result" && line.is_error === true) {
    const status = httpStatus(line.api_error_status);
    const api =
      status !== undefined ||
      line.terminal_reason === "api_error" ||
      line.terminal_reason === "prompt_too_long" ||
      typeof line.api_error === "string";
    if (!api) return undefined;
    const message = text(line.result);
    if (line.terminal_reason === "prompt_too_long" && status === undefined) {
      return providerAnswer("anthropic", 400, message);
    }
    return providerAnswer("anthropic", status ?? 0, message);
  }
  if (line.type === "system" && line.subtype === "api_retry") {
    const status = httpStatus(line.error_status) ?? 0;
    const kind = text(line.error);
    return providerAnswer("anthropic", status, kind === "" ? `API ${status}` : kind);
  }
  return undefined;
}
