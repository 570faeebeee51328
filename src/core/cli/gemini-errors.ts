/**
 * The gemini CLI's own account of a failure, from its stream-json lines (docs/agent-clis.md,
 * "gemini"). Pure: no I/O.
 *
 * A fatal error ends the run with `{"type":"result","status":"error","error":{"type","message"}}`;
 * an API error's message is `[API Error: <text>]`, where <text> is either Google's whole error body
 * (`{"error":{"code","message","status"}}`, for 401 and 5xx) or the message the CLI's quota
 * classifier kept (429, 503), optionally followed by the CLI's advice on the next line. The
 * envelope is unwrapped so a failure reason reads `API error 401 UNAUTHENTICATED: Request had
 * invalid authentication credentials…` rather than escaped JSON. Non-fatal `error` lines with
 * severity `error` count too; warnings and failed tool calls (`tool_result` with status `error`,
 * which the model sees and works around) do not.
 */
type Line = Readonly<Record<string, unknown>>;

const API_ERROR_PREFIX = "[API Error: ";
/** Longest message worth searching for an embedded error body. */
const MAX_SCAN = 64 * 1024;

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

interface GoogleStatus {
  code?: unknown;
  message?: unknown;
  status?: unknown;
}

/** Google's `{"error": {...}}` body at the start of `text`, and what follows it; else undefined. */
function leadingErrorBody(text: string): { error: GoogleStatus; rest: string } | undefined {
  if (!text.startsWith("{") || text.length > MAX_SCAN) return undefined;
  // The body may be pretty-printed and may contain "]" or "}" in its message: try each closing
  // brace from the last one backwards until the prefix parses.
  for (let end = text.lastIndexOf("}"); end > 0; end = text.lastIndexOf("}", end - 1)) {
    try {
      const parsed = JSON.parse(text.slice(0, end + 1)) as { error?: unknown };
      if (typeof parsed?.error === "object" && parsed.error !== null) {
        return { error: parsed.error as GoogleStatus, rest: text.slice(end + 1) };
      }
      return undefined;
    } catch {
      // not yet a whole JSON value
    }
  }
  return undefined;
}

/** `[API Error: …]…` made readable: Google's envelope unwrapped, the CLI's advice kept. */
export function readableGeminiError(message: string): string {
  if (!message.startsWith(API_ERROR_PREFIX)) return message;
  const inner = message.slice(API_ERROR_PREFIX.length);
  const body = leadingErrorBody(inner);
  if (body !== undefined) {
    const { code, status } = body.error;
    const what = [typeof code === "number" ? String(code) : undefined, str(status)].filter(Boolean).join(" ");
    const text = str(body.error.message) ?? "";
    const rest = body.rest.trim().replace(/^\]/, "").trim();
    return [`API error${what ? ` ${what}` : ""}: ${text}`.trim(), rest].filter((s) => s !== "").join(" ");
  }
  const close = inner.indexOf("]\n");
  const [head, rest] =
    close >= 0 ? [inner.slice(0, close), inner.slice(close + 2)] : [inner.replace(/\]$/, ""), ""];
  return [`API error: ${head.trim()}`, rest.trim()].filter((s) => s !== "").join(" ");
}

/** The failure this gemini stream-json line reports, in the CLI's words; undefined for any other line. */
export function geminiErrorMessage(line: Line): string | undefined {
  if (line.type === "result" && line.status === "error") {
    const error = line.error as { type?: unknown; message?: unknown } | undefined;
    const message = str(error?.message);
    if (message !== undefined) return readableGeminiError(message);
    const type = str(error?.type);
    return type !== undefined && type !== "unknown" ? type : undefined;
  }
  if (line.type === "error" && line.severity === "error") return str(line.message);
  return undefined;
}
