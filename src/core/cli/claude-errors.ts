/**
 * The claude CLI's own account of a failure, from its stream-json lines (docs/agent-clis.md,
 * "claude"). Also used for exec, which prints claude-style lines. Pure: no I/O.
 *
 * - A `result` line with `is_error: true` ends a failed run. Its `result` holds the CLI's message
 *   (on an API failure the CLI's wording, which for a 401 drops the provider's own text: `Invalid
 *   API key · Fix external API key`); `error_*` subtypes carry `errors[]` instead. When the line
 *   names the HTTP status (`api_error_status`, `api_error_type`) and the text does not, they are
 *   appended, so the reason says what the provider answered.
 * - A `system` line with subtype `api_retry` is the CLI about to retry a failed API call: the last
 *   word there is when the CLI is stopped before it gives up.
 */
type Line = Readonly<Record<string, unknown>>;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function status(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) ? value : undefined;
}

function resultError(line: Line): string | undefined {
  const errors = Array.isArray(line.errors) ? line.errors.filter((e) => typeof e === "string") : [];
  const message = text(line.result) ?? text(errors[0]);
  if (message === undefined) return undefined;
  const code = status(line.api_error_status);
  if (code === undefined || message.includes(String(code))) return message;
  const type = text(line.api_error_type);
  return `${message} (API ${code}${type !== undefined ? ` ${type}` : ""})`;
}

function retryNotice(line: Line): string {
  const code = status(line.error_status);
  const kind = text(line.error);
  const what = [code !== undefined ? `API ${code}` : "no API response", kind].filter(Boolean).join(" ");
  const attempt = status(line.attempt);
  const max = status(line.max_retries);
  const retry = attempt !== undefined ? `; retry ${attempt}${max !== undefined ? ` of ${max}` : ""}` : "";
  return `API request failed (${what})${retry}`;
}

export function claudeErrorMessage(line: Line): string | undefined {
  if (line.type === "result") return line.is_error === true ? resultError(line) : undefined;
  if (line.type === "system" && line.subtype === "api_retry") return retryNotice(line);
  return undefined;
}
