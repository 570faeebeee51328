/**
 * The provider's answer on a gemini stream-json line (docs/provider-limits.md#gemini). Pure.
 *
 * A failed model call ends the run with `{"type":"result","status":"error","error":{"message":
 * "[API Error: <text>]…"}}` and an exit code that is **the HTTP status modulo 256** (401 → 145,
 * 429 → 173, 503 → 247) when the CLI knew the status, else 1. `<text>` is Google's whole error body
 * (`{"error":{"code":…,"message":…,"status":…}}`) for most statuses, or the message the CLI's quota
 * classifier kept: `Resource has been exhausted (e.g. check quota).` (429, with `Suggested retry
 * after 1s.` when the answer carried a RetryInfo), `You have exhausted your daily quota on this
 * model.` (a daily quota), `The model is overloaded. …` (503), `Requested entity was not found.`
 * (404, exit 1), `terminated` (a dropped stream) or `… fetch failed …` (no answer).
 */
import type { JsonLine } from "../cli/vendors.js";
import { httpStatus, type ProviderAnswer, providerAnswer } from "./answer.js";

const API_ERROR = "[API Error: ";

/** `Suggested retry after 1s.` / `Please retry in 1.5s` / `…in 200ms`: seconds. */
function suggestedDelay(text: string): number | undefined {
  const m = /(?:Suggested retry after|Please retry in) ([0-9.]+)(ms|s)\b/.exec(text);
  if (!m?.[1]) return undefined;
  const n = Number(m[1]);
  if (!Number.isFinite(n)) return undefined;
  return m[2] === "ms" ? n / 1000 : n;
}

/** Google's `{"error":{"code",…}}` at the start of `text`: its code and message. */
function googleBody(text: string): { code?: number; message: string } | undefined {
  if (!text.startsWith("{")) return undefined;
  for (let end = text.lastIndexOf("}"); end > 0; end = text.lastIndexOf("}", end - 1)) {
    try {
      const e = (JSON.parse(text.slice(0, end + 1)) as { error?: { code?: unknown; message?: unknown } })
        .error;
      if (typeof e !== "object" || e === null) return undefined;
      const code = httpStatus(e.code);
      return {
        ...(code !== undefined ? { code } : {}),
        message: typeof e.message === "string" ? e.message : "",
      };
    } catch {
      // not yet a whole JSON value
    }
  }
  return undefined;
}

/** The status the CLI's text names, when it says it in words rather than a number. */
function statusFromWords(text: string): number | undefined {
  if (/^Resource has been exhausted|^You have exhausted your daily quota/.test(text)) return 429;
  if (/^The model is overloaded/.test(text)) return 503;
  if (/^Requested entity was not found/.test(text)) return 404;
  if (/^terminated\b|fetch failed|ECONNRESET|socket hang up/.test(text)) return 0;
  return undefined;
}

/**
 * The answer on `line`; `exitCode` (the CLI's, when it has exited) gives the status when the text
 * does not.
 */
export function geminiAnswer(line: JsonLine, exitCode?: number): ProviderAnswer | undefined {
  if (line.type !== "result" || line.status !== "error") return undefined;
  const error = line.error as { message?: unknown } | undefined;
  const message = typeof error?.message === "string" ? error.message : "";
  if (!message.startsWith(API_ERROR)) return undefined;
  const inner = message.slice(API_ERROR.length);
  const body = googleBody(inner);
  const text =
    body?.message ??
    inner
      .replace(/\]\s*$/, "")
      .replace(/\]\n/, " ")
      .trim();
  const fromExit = exitCode !== undefined && exitCode >= 144 && exitCode <= 255 ? exitCode + 256 : undefined;
  const status = body?.code ?? statusFromWords(inner) ?? fromExit;
  if (status === undefined) return undefined;
  return providerAnswer("gemini", status, text, suggestedDelay(inner));
}
