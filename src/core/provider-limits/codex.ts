/**
 * The provider's answer on a codex `exec --json` line (docs/provider-limits.md#codex). Pure.
 *
 * The turn ends with `turn.failed` and the error codex gave up on; before it, each of its own
 * retries prints `error` `Reconnecting... n/m (<cause>)`. The message is codex's, in one of these
 * shapes (0.169.0):
 * - `unexpected status 503 Service Unavailable: <provider message>, url: …, request id: …`;
 * - `exceeded retry limit, last status: 429 Too Many Requests, request id: …` (a rate limit);
 * - `We’re currently experiencing high demand, which may cause temporary errors.` (a 500);
 * - `stream disconnected before completion: …` and `Connection failed: …` (no answer);
 * - the provider's own words for what codex recognises: `Quota exceeded. Check your plan and
 *   billing details.` (429 insufficient_quota), `The model … does not exist …` (404), or the
 *   provider's whole error body (`{"error":{"message":…,"type":…}}`, a 400).
 * codex honours `retry-after` in its own retries but prints no header: its answers carry none.
 */
import type { JsonLine } from "../cli/vendors.js";
import { httpStatus, type ProviderAnswer, providerAnswer } from "./answer.js";

const RECONNECTING = /^Reconnecting\.\.\. \d+\/\d+ \((.*)\)$/s;

function messageOf(line: JsonLine): string | undefined {
  if (line.type === "turn.failed") {
    const error = line.error as { message?: unknown } | undefined;
    return typeof error?.message === "string" ? error.message : undefined;
  }
  if (line.type === "error" && typeof line.message === "string") {
    return RECONNECTING.exec(line.message)?.[1] ?? line.message;
  }
  return undefined;
}

/** The provider's error body codex passed on as the whole message: its message and type. */
function errorBody(message: string): { text: string; type: string } | undefined {
  if (!message.startsWith("{")) return undefined;
  try {
    const body = JSON.parse(message) as { error?: { message?: unknown; type?: unknown; code?: unknown } };
    const e = body.error;
    if (typeof e?.message !== "string") return undefined;
    return { text: e.message, type: [e.type, e.code].filter((v) => typeof v === "string").join(" ") };
  } catch {
    return undefined;
  }
}

export function codexAnswer(line: JsonLine): ProviderAnswer | undefined {
  const message = messageOf(line);
  if (message === undefined) return undefined;
  const status = httpStatus(/(?:unexpected status|last status:) (\d{3})\b/.exec(message)?.[1]);
  if (status !== undefined) return providerAnswer("openai", status, message);
  if (/^(stream disconnected before completion|Connection failed)/.test(message)) {
    return providerAnswer("openai", 0, message);
  }
  if (/experiencing high demand/.test(message)) return providerAnswer("openai", 500, message);
  if (/^Quota exceeded\./.test(message)) return providerAnswer("openai", 429, message);
  if (/^The model .* does not exist/.test(message)) return providerAnswer("openai", 404, message);
  const body = errorBody(message);
  if (body !== undefined)
    return providerAnswer("openai", 400, `${body.text}${body.type ? ` (${body.type})` : ""}`);
  return undefined;
}
