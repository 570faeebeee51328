/**
 * `output.select`: which tool-native (CLI) lines reach the sinks (docs/events.md#outputselect).
 *
 * Pure: a line is classified by the vendor's rules, then matched against the allow-list.
 * Lifecycle, file, turn and delivery events never pass through here (they are never filtered),
 * and stdout / status.output are never filtered either.
 */
import { opencodeErrorMessage, opencodePart } from "../core/cli/opencode-lines.js";
import type { Vendor } from "../core/cli/routing.js";
import type { OutputSelector } from "../core/types.js";

export type LineClass = OutputSelector["event"];

export interface Classification {
  class: LineClass;
  /** The tool name, compared exactly with a selector's `tool`. */
  tool?: string;
  /** The text a selector's `contains` is searched in (case-sensitive). */
  text?: string;
  /** Message lines only (docs/decisions.md D-8). */
  role?: "assistant" | "user";
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function role(value: unknown): "assistant" | "user" | undefined {
  return value === "assistant" || value === "user" ? value : undefined;
}

/** Claude rules, also used for exec lines. */
function classifyClaude(line: Json): Classification | undefined {
  const type = line.type;
  if (type === "result") return { class: "result", text: str(line.result) };
  if (type === "assistant" || type === "user") {
    const message = isObject(line.message) ? line.message : {};
    const content = message.content;
    if (Array.isArray(content)) {
      // The first tool_use / tool_result block found decides the class.
      for (const block of content) {
        if (!isObject(block)) continue;
        if (block.type === "tool_use") return { class: "tool_call", tool: str(block.name) };
        if (block.type === "tool_result") return { class: "tool_result", text: str(block.content) };
      }
      const text = content
        .filter((b): b is Json => isObject(b) && b.type === "text" && typeof b.text === "string")
        .map((b) => b.text as string)
        .join("");
      return { class: "message", text, role: type };
    }
    return { class: "message", text: str(content) ?? "", role: type };
  }
  if (type === "system" && typeof line.subtype === "string" && line.subtype.includes("token")) {
    return { class: "usage" };
  }
  return undefined;
}

function classifyCodex(line: Json): Classification | undefined {
  if (line.type === "turn.completed") return { class: "usage" };
  if (line.type !== "item.completed" || !isObject(line.item)) return undefined;
  const item = line.item;
  switch (item.type) {
    case "agent_message":
      return { class: "message", text: str(item.text), role: "assistant" };
    case "command_execution":
      return { class: "tool_call", text: str(item.command) };
    case "mcp_tool_call":
      return { class: "tool_call", tool: str(item.tool) };
    case "file_change":
    case "web_search":
      return { class: "tool_call" };
    default:
      return undefined;
  }
}

/** Gemini rules: proposal (docs/decisions.md D-27). */
function classifyGemini(line: Json): Classification | undefined {
  switch (line.type) {
    case "message":
      return { class: "message", text: str(line.content), role: role(line.role) };
    case "tool_use":
      return { class: "tool_call", tool: str(line.tool_name) };
    case "tool_result":
      return { class: "tool_result", text: str(line.output) };
    case "result":
      return { class: "result" };
    default:
      return undefined;
  }
}

/**
 * opencode `run --format json` rules (docs/events.md): its lines name their kind in `type` and
 * carry the content in `part`. The line that ends a run is its `result`: the last step's
 * step_finish (reason stop) or an error line; every other step_finish reports a step's usage.
 */
function classifyOpencode(line: Json): Classification | undefined {
  const part = opencodePart(line);
  switch (line.type) {
    case "text":
      return { class: "message", text: str(part.text), role: "assistant" };
    case "tool_use": {
      const state = isObject(part.state) ? part.state : {};
      return { class: "tool_call", tool: str(part.tool), text: JSON.stringify(state.input ?? {}) };
    }
    case "step_finish":
      return part.reason === "stop" ? { class: "result" } : { class: "usage" };
    case "error":
      return { class: "result", text: opencodeErrorMessage(line) };
    default:
      return undefined;
  }
}

/** The line's class under the vendor's rules; undefined for non-JSON or unclassified lines. */
export function classifyLine(vendor: Vendor, line: string): Classification | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isObject(parsed)) return undefined;
  switch (vendor) {
    case "codex":
      return classifyCodex(parsed);
    case "gemini":
      return classifyGemini(parsed);
    case "opencode":
      return classifyOpencode(parsed);
    default:
      return classifyClaude(parsed);
  }
}

/** Unset and empty string mean the same: no constraint. */
function set(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

export function selectorMatches(selector: OutputSelector, c: Classification): boolean {
  if (selector.event !== c.class) return false;
  if (set(selector.tool) && selector.tool !== c.tool) return false;
  if (set(selector.role) && (c.class !== "message" || selector.role !== c.role)) return false;
  if (set(selector.contains) && !(c.text ?? "").includes(selector.contains)) return false;
  return true;
}

/**
 * Does this CLI line go to the sinks? Empty or absent select lets every line through, including
 * non-JSON ones; otherwise the line must be classified and match at least one selector.
 */
export function passesSelect(
  selectors: readonly OutputSelector[] | undefined,
  vendor: Vendor,
  line: string,
): boolean {
  if (selectors === undefined || selectors.length === 0) return true;
  const c = classifyLine(vendor, line);
  if (c === undefined) return false;
  return selectors.some((s) => selectorMatches(s, c));
}
