/**
 * What the lines of `opencode run --format json` say (docs/agent-clis.md, "opencode"). Every line
 * is `{type, timestamp, sessionID, …}`: `step_start`, `text`, `reasoning` and `tool_use` carry a
 * `part`, `step_finish` a part with the step's `reason`, `tokens` and `cost` (USD), and `error` an
 * `error: {name, data: {message, statusCode?, …}}`. Only the run's own session is printed (a
 * subagent's steps are not).
 *
 * Pure: lines are parsed JSON objects.
 */
import type { JsonLine, TerminalVerdict } from "./json-line.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The line's `part` object, or an empty one. */
export function opencodePart(line: JsonLine): Json {
  return isObject(line.part) ? line.part : {};
}

/**
 * The last step of a finished run ends with reason `stop` (the CLI leaves its loop and exits about
 * a second later). A step ending in `tool-calls` is followed by another step, or by the exit when
 * a tool's permission was refused; an API error prints an `error` line and exits 1. Neither is a
 * terminal line: the exit code decides those runs.
 */
export function opencodeTerminal(line: JsonLine): TerminalVerdict | undefined {
  return line.type === "step_finish" && opencodePart(line).reason === "stop" ? { success: true } : undefined;
}

/** Every line names the run's session (`ses_…`). */
export function opencodeSessionId(line: JsonLine): string | undefined {
  return nonEmpty(line.sessionID);
}

/**
 * The provider's answer on an `error` line: `data.message`, with the HTTP status when the error
 * came from the API (`invalid x-api-key (HTTP 401)`), else the error's name.
 */
export function opencodeErrorMessage(line: JsonLine): string | undefined {
  if (line.type !== "error") return undefined;
  const error = isObject(line.error) ? line.error : {};
  const data = isObject(error.data) ? error.data : {};
  const message = nonEmpty(data.message);
  const status = num(data.statusCode);
  if (message === undefined) return nonEmpty(error.name);
  return status === undefined ? message : `${message} (HTTP ${status})`;
}

export interface OpencodeStepUsage {
  reason?: string;
  /** USD, as opencode prices the model (0 for a model its catalog has no price for). */
  cost?: number;
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A `step_finish` line's reason, cost and tokens; undefined for any other line. */
export function opencodeStepUsage(line: JsonLine): OpencodeStepUsage | undefined {
  if (line.type !== "step_finish") return undefined;
  const part = opencodePart(line);
  const tokens = isObject(part.tokens) ? part.tokens : {};
  const cache = isObject(tokens.cache) ? tokens.cache : {};
  return {
    reason: nonEmpty(part.reason),
    cost: num(part.cost),
    inputTokens: num(tokens.input),
    outputTokens: num(tokens.output),
    cacheReadTokens: num(cache.read),
    cacheWriteTokens: num(cache.write),
  };
}
