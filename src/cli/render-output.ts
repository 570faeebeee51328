/**
 * A run's CLI output (status.output or the agent container's log) made readable per vendor
 * (the lines docs/agent-clis.md records): assistant text as it is, one line per tool call and tool result,
 * a closing line with the outcome, cost or tokens. Pure; stateful only to join Gemini's streamed
 * assistant deltas into one block and to sum opencode's per-step cost and tokens.
 */

import { readableGeminiError } from "../core/cli/gemini-errors.js";
import { opencodeErrorMessage, opencodePart, opencodeStepUsage } from "../core/cli/opencode-lines.js";
import { routeModel, type Vendor } from "../core/cli/routing.js";
import { type JsonLine, parseJsonLine } from "../core/cli/vendors.js";
import { type ProviderLimitEvent, parseProviderLimitEvent } from "../core/provider-limits/retry-event.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The first line of `text`, at most `max` characters, with an ellipsis when cut. */
export function oneLine(text: string, max = 160): string {
  const first = text.trim().split("\n")[0] ?? "";
  const more = first.length > max || text.trim().includes("\n");
  return more ? `${first.slice(0, max)}…` : first;
}

/** The `type`s of opencode's `run --format json` lines, each of which carries a `sessionID`. */
const OPENCODE_TYPES = new Set(["step_start", "step_finish", "text", "reasoning", "tool_use", "error"]);

/** Which CLI printed these lines, from the lines' own shapes; undefined when none tells. */
export function detectVendor(lines: readonly string[]): Vendor | undefined {
  for (const line of lines) {
    const j = parseJsonLine(line);
    if (!j) continue;
    const type = str(j.type) ?? "";
    // Before gemini: opencode's tool_use line has a timestamp too.
    if (typeof j.sessionID === "string" && OPENCODE_TYPES.has(type)) return "opencode";
    if (
      type === "thread.started" ||
      type === "turn.started" ||
      type.startsWith("item.") ||
      type.startsWith("turn.")
    ) {
      return "codex";
    }
    if (
      type === "init" ||
      ("timestamp" in j && ["message", "tool_use", "tool_result", "result"].includes(type))
    ) {
      return "gemini";
    }
    if (
      type === "system" ||
      type === "assistant" ||
      type === "user" ||
      (type === "result" && "subtype" in j)
    ) {
      return "claude";
    }
  }
  return undefined;
}

/** The vendor for rendering: what the lines say, else the Agent's model, else Claude's format. */
export function vendorFor(lines: readonly string[], model: string | undefined): Vendor {
  return detectVendor(lines) ?? (model ? routeModel(model) : "claude");
}

/** opencode's cost and tokens, one step's or summed over the steps, for its closing line. */
interface RunCost {
  usd?: number;
  inputTokens?: number;
  outputTokens?: number;
}

function addStep(total: RunCost | undefined, step: ReturnType<typeof opencodeStepUsage>): RunCost {
  return {
    usd: (total?.usd ?? 0) + (step?.cost ?? 0),
    inputTokens: (total?.inputTokens ?? 0) + (step?.inputTokens ?? 0),
    outputTokens: (total?.outputTokens ?? 0) + (step?.outputTokens ?? 0),
  };
}

function seconds(ms: unknown): string | undefined {
  const n = num(ms);
  return n === undefined ? undefined : `${(n / 1000).toFixed(1)} s`;
}

function parts(...items: (string | undefined | false)[]): string {
  return items.filter((i): i is string => typeof i === "string" && i !== "").join(" · ");
}

/** A tool call's argument in a few words: the command, the file, the pattern, else compact JSON. */
function toolArgument(input: unknown): string {
  if (!isObject(input)) return "";
  for (const key of ["command", "file_path", "filePath", "path", "pattern", "url", "query"]) {
    const value = input[key];
    if (typeof value === "string") return oneLine(value, 120);
  }
  const json = JSON.stringify(input);
  return json === "{}" ? "" : oneLine(json, 120);
}

function toolResultText(content: unknown): string {
  if (typeof content === "string") return oneLine(content);
  if (Array.isArray(content)) {
    const text = content.map((b) => (isObject(b) && typeof b.text === "string" ? b.text : "")).join("");
    return oneLine(text);
  }
  return "";
}

/** ` (error_max_turns)`, or ` (API 529)` for a failed API call reported with subtype success. */
function failureDetail(j: JsonLine): string {
  const subtype = str(j.subtype);
  if (subtype && subtype !== "success") return ` (${subtype})`;
  const status = num(j.api_error_status);
  return status === undefined ? "" : ` (API ${status})`;
}

function claudeLine(j: JsonLine): string[] {
  switch (j.type) {
    case "system":
      if (j.subtype === "init") return [`[session] ${parts(str(j.session_id), str(j.model))}`];
      // docs/agent-clis.md (claude): the CLI's notice before it retries a failed API call.
      if (j.subtype === "api_retry") {
        const status = num(j.error_status);
        const attempt = num(j.attempt);
        return [
          `[retry] ${parts(
            status !== undefined ? `API ${status}` : "no API response",
            str(j.error),
            attempt !== undefined &&
              `attempt ${attempt}${num(j.max_retries) !== undefined ? ` of ${j.max_retries}` : ""}`,
            num(j.retry_delay_ms) !== undefined && `next in ${seconds(j.retry_delay_ms)}`,
          )}`,
        ];
      }
      return [];
    case "assistant":
    case "user": {
      // The CLI's own message after it gave up on an API call: the result line that follows says it.
      if (j.is_api_error_message === true) return [];
      const message = isObject(j.message) ? j.message : {};
      const content = message.content;
      if (typeof content === "string") return j.type === "user" ? [`[user] ${oneLine(content)}`] : [content];
      if (!Array.isArray(content)) return [];
      const out: string[] = [];
      for (const block of content) {
        if (!isObject(block)) continue;
        if (block.type === "text" && typeof block.text === "string") {
          out.push(j.type === "user" ? `[user] ${oneLine(block.text)}` : block.text);
        } else if (block.type === "tool_use") {
          out.push(`[tool] ${parts(str(block.name) ?? "?", toolArgument(block.input))}`.trimEnd());
        } else if (block.type === "tool_result") {
          out.push(
            `[${block.is_error === true ? "tool error" : "tool result"}] ${toolResultText(block.content)}`.trimEnd(),
          );
        }
      }
      return out;
    }
    case "result": {
      const failed = j.is_error === true || (str(j.subtype) ?? "success") !== "success";
      const summary = `[result] ${parts(
        failed ? `failed${failureDetail(j)}` : "success",
        num(j.total_cost_usd) !== undefined && `cost $${(num(j.total_cost_usd) as number).toFixed(4)}`,
        num(j.num_turns) !== undefined && `${j.num_turns} turn${j.num_turns === 1 ? "" : "s"}`,
        seconds(j.duration_ms),
      )}`;
      const why = failed
        ? (str(j.result) ?? (Array.isArray(j.errors) ? j.errors.join("; ") : undefined))
        : undefined;
      return why ? [summary, `[error] ${oneLine(why, 500)}`] : [summary];
    }
    default:
      return [];
  }
}

function codexLine(j: JsonLine): string[] {
  switch (j.type) {
    case "thread.started":
      return [`[session] ${str(j.thread_id) ?? ""}`.trimEnd()];
    case "item.completed": {
      const item = isObject(j.item) ? j.item : {};
      switch (item.type) {
        case "agent_message":
          return [str(item.text) ?? ""];
        case "command_execution":
          return [
            `[tool] ${parts("shell", oneLine(str(item.command) ?? "", 120), num(item.exit_code) !== undefined && `exit ${item.exit_code}`)}`,
          ];
        case "file_change": {
          const changes = Array.isArray(item.changes) ? item.changes.filter(isObject) : [];
          return [
            `[tool] ${parts("edit", changes.map((c) => `${str(c.kind) ?? "update"} ${str(c.path) ?? "?"}`).join(", "))}`,
          ];
        }
        case "mcp_tool_call":
          return [`[tool] ${[str(item.server), str(item.tool)].filter(Boolean).join(".") || "mcp"}`];
        case "web_search":
          return [`[tool] ${parts("web search", str(item.query))}`];
        case "error":
          return [`[warning] ${str(item.message) ?? ""}`.trimEnd()];
        default:
          return [];
      }
    }
    case "turn.completed": {
      const usage = isObject(j.usage) ? j.usage : {};
      return [
        `[result] ${parts("success", `${num(usage.input_tokens) ?? 0} in / ${num(usage.output_tokens) ?? 0} out tokens`, num(usage.cached_input_tokens) !== undefined && `${usage.cached_input_tokens} cached`)}`,
      ];
    }
    case "turn.failed": {
      const error = isObject(j.error) ? j.error : {};
      return ["[result] failed", `[error] ${oneLine(str(error.message) ?? "", 500)}`];
    }
    case "error":
      return [`[error] ${oneLine(str(j.message) ?? "", 500)}`];
    default:
      return [];
  }
}

function geminiLine(j: JsonLine): string[] {
  switch (j.type) {
    case "init":
      return [`[session] ${parts(str(j.session_id), str(j.model))}`];
    case "message":
      return j.role === "user" ? [`[user] ${oneLine(str(j.content) ?? "")}`] : [str(j.content) ?? ""];
    case "tool_use":
      return [`[tool] ${parts(str(j.tool_name) ?? "?", toolArgument(j.parameters))}`.trimEnd()];
    case "tool_result": {
      const error = isObject(j.error) ? j.error : undefined;
      return j.status === "error"
        ? [`[tool error] ${oneLine(str(error?.message) ?? "")}`.trimEnd()]
        : [`[tool result] ${oneLine(str(j.output) ?? "")}`.trimEnd()];
    }
    case "error":
      return [`[${j.severity === "warning" ? "warning" : "error"}] ${oneLine(str(j.message) ?? "", 500)}`];
    case "result": {
      const stats = isObject(j.stats) ? j.stats : {};
      const error = isObject(j.error) ? j.error : undefined;
      const summary = `[result] ${parts(
        j.status === "success" ? "success" : "failed",
        `${num(stats.input_tokens) ?? 0} in / ${num(stats.output_tokens) ?? 0} out tokens`,
        num(stats.tool_calls)
          ? `${stats.tool_calls} tool call${stats.tool_calls === 1 ? "" : "s"}`
          : undefined,
        num(stats.duration_ms) ? seconds(stats.duration_ms) : undefined,
      )}`;
      if (!error) return [summary];
      // An API error's message wraps Google's JSON body (docs/agent-clis.md, gemini): unwrapped,
      // on one line; the type is the JS error's class name, "unknown" for API errors.
      const message = readableGeminiError(str(error.message) ?? "").replace(/\s+/g, " ");
      const type = str(error.type) === "unknown" ? undefined : str(error.type);
      return [summary, `[error] ${parts(type, oneLine(message, 500))}`];
    }
    default:
      return [];
  }
}

const tokensText = (cost: RunCost): string =>
  `${cost.inputTokens ?? 0} in / ${cost.outputTokens ?? 0} out tokens`;
const steps = (n: number): string => `${n} step${n === 1 ? "" : "s"}`;

/**
 * opencode's lines (docs/agent-clis.md, "opencode"): the session once, text as it is, each tool
 * call with its outcome, and one closing line with the cost and tokens summed over the steps: on
 * the last step (reason stop), or at the end of a log whose run stopped after a tool call (a
 * refused permission). A step ending any other way (length, content-filter) gets a line of its own.
 */
class OpencodeLines {
  private sessionShown = false;
  private total: RunCost | undefined;
  private stepCount = 0;

  line(j: JsonLine): string[] {
    const part = opencodePart(j);
    switch (j.type) {
      case "step_start": {
        if (this.sessionShown || typeof j.sessionID !== "string") return [];
        this.sessionShown = true;
        return [`[session] ${j.sessionID}`];
      }
      case "text":
        return [str(part.text) ?? ""];
      case "tool_use": {
        const state = isObject(part.state) ? part.state : {};
        const call = `[tool] ${parts(str(part.tool) ?? "?", toolArgument(state.input))}`.trimEnd();
        if (state.status === "error")
          return [call, `[tool error] ${oneLine(str(state.error) ?? "")}`.trimEnd()];
        if (state.status === "completed")
          return [call, `[tool result] ${oneLine(str(state.output) ?? "")}`.trimEnd()];
        return [call];
      }
      case "step_finish": {
        const step = opencodeStepUsage(j);
        this.total = addStep(this.total, step);
        this.stepCount++;
        if (step?.reason === "stop") return this.summary("success");
        if (step?.reason === "tool-calls") return [];
        const own: RunCost = {
          usd: step?.cost,
          inputTokens: step?.inputTokens,
          outputTokens: step?.outputTokens,
        };
        return [
          `[step] ${parts(step?.reason ?? "ended", step?.cost !== undefined && `cost $${step.cost.toFixed(4)}`, tokensText(own))}`,
        ];
      }
      case "error": {
        const summary = this.summary("failed");
        return [...summary, `[error] ${oneLine(opencodeErrorMessage(j) ?? "", 500)}`.trimEnd()];
      }
      default:
        return [];
    }
  }

  /** What the log ends with when no closing line came (the run stopped after a tool call). */
  end(): string[] {
    return this.stepCount > 0 ? this.summary("ended") : [];
  }

  private summary(outcome: string): string[] {
    const total = this.total ?? {};
    const out = `[result] ${parts(
      outcome,
      this.stepCount > 0 && total.usd !== undefined && `cost $${total.usd.toFixed(4)}`,
      this.stepCount > 0 && tokensText(total),
      this.stepCount > 0 && steps(this.stepCount),
    )}`;
    this.total = undefined;
    this.stepCount = 0;
    return [out];
  }
}

/** Renders one line at a time (for following a live log); call `end()` after the last one. */
/** `[provider limit] anthropic answered 529 (overloaded) · retry 1 in 7 s · Overloaded`. */
export function providerWaitLine(e: ProviderLimitEvent): string {
  const answer = e.status === 0 ? `${e.provider} gave no answer` : `${e.provider} answered ${e.status}`;
  const asked = e.retryAfterSeconds !== undefined ? " (as it asked)" : "";
  const words = e.message ? ` · ${oneLine(e.message)}` : "";
  return `[provider limit] ${answer}${e.reason ? ` (${e.reason})` : ""} · retry ${e.retry} in ${e.waitSeconds} s${asked}${words}`;
}

export class OutputRenderer {
  /** Gemini's assistant deltas waiting to be joined. */
  private pendingText = "";
  private readonly opencode = new OpencodeLines();

  constructor(readonly vendor: Vendor) {}

  line(line: string): string[] {
    if (line.trim() === "") return [];
    const j = parseJsonLine(line);
    // Not JSON: the truncation marker, a plain command's output, a CLI's stderr.
    if (!j) return [...this.flush(), line];
    // The supervisor's wait for a provider that limited the run (docs/provider-limits.md#what-a-user-sees).
    const wait = parseProviderLimitEvent(j);
    if (wait) return [...this.flush(), providerWaitLine(wait)];
    if (this.vendor === "gemini" && j.type === "message" && j.role === "assistant" && j.delta === true) {
      this.pendingText += str(j.content) ?? "";
      return [];
    }
    const rendered =
      this.vendor === "codex"
        ? codexLine(j)
        : this.vendor === "gemini"
          ? geminiLine(j)
          : this.vendor === "opencode"
            ? this.opencode.line(j)
            : claudeLine(j);
    return [...this.flush(), ...rendered];
  }

  end(): string[] {
    return [...this.flush(), ...(this.vendor === "opencode" ? this.opencode.end() : [])];
  }

  private flush(): string[] {
    if (this.pendingText === "") return [];
    const text = this.pendingText;
    this.pendingText = "";
    return [text];
  }
}

/** The whole output rendered; `vendor` as decided by vendorFor. */
export function renderOutput(output: string, vendor: Vendor): string[] {
  const renderer = new OutputRenderer(vendor);
  const out: string[] = [];
  for (const line of output.split("\n")) out.push(...renderer.line(line));
  out.push(...renderer.end());
  return out;
}
