/**
 * src/core/cli/: the agent CLIs. Which CLI runs a model (routing.ts), the versions this release
 * pins (agent-clis.ts), the argv each gets (argv.ts) with its prompt rendered (templating.ts), and
 * what their lines say: the terminal line, the session id, the CLI's own account of a failure
 * (vendors.ts, the per-CLI readers beside it).
 *
 * The vendor adapter table: everything that differs per agent CLI and that both the controller
 * and the run pod need, in one place so they cannot drift (docs/supervisor.md#terminal-lines-and-exit-codes,
 * docs/events.md#tool-native-lines; docs/decisions.md D-27, D-29, D-53).
 *
 * - which line ends a run (the terminal line) and whether it reports success;
 * - which session id a line announces (the controller's read-back and the realtime supervisor);
 * - where the CLI keeps its conversation state under $HOME (conversation save and restore);
 * - the per-vendor CLI argv, hosted in ./argv.ts and re-exported here as the entry point.
 *
 * Pure: no I/O. Lines are parsed as JSON, never matched as strings (docs/events.md#tool-native-lines).
 */

import { claudeErrorMessage } from "./claude-errors.js";
import { geminiErrorMessage } from "./gemini-errors.js";
import type { JsonLine, TerminalVerdict } from "./json-line.js";
import { opencodeErrorMessage, opencodeSessionId, opencodeTerminal } from "./opencode-lines.js";
import type { Vendor } from "./routing.js";

export { cliArgv, execCommand, mcpConfigJson, mcpHeaderEnvName, SUPERVISOR_PATH } from "./argv.js";
export type { JsonLine, TerminalVerdict } from "./json-line.js";
export { routeModel, type Vendor } from "./routing.js";

export interface VendorAdapter {
  /** The verdict when this line is the vendor's terminal line; undefined for any other line. */
  terminal(line: JsonLine): TerminalVerdict | undefined;
  /** The session id this line announces; undefined when it announces none. */
  sessionId(line: JsonLine): string | undefined;
  /** The CLI's conversation state directory, relative to $HOME; undefined when it keeps none. */
  stateDir?: string;
  /**
   * The CLI's own account of why it failed, when this line carries one (an API error it gave up
   * on, an invalid key): the controller puts the last one into status.failureReason, so a user
   * sees what the provider answered rather than only an exit code (docs/agent-clis.md).
   */
  errorMessage?(line: JsonLine): string | undefined;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Claude stream-json (and exec, which must print Claude-style lines): `result` ends the run. */
const claudeTerminal = (line: JsonLine): TerminalVerdict | undefined =>
  line.type === "result" ? { success: line.is_error !== true } : undefined;

const none = (): undefined => undefined;

/**
 * codex `exec --json`: `turn.failed` carries the error the turn ended on; `error` lines carry each
 * failed attempt first (`Reconnecting... 1/2 (<cause>)`), so a run stopped while still retrying
 * names its cause too (docs/agent-clis.md#codex). Warnings (`item.completed` of type `error`) are
 * not failures.
 */
const codexError = (line: JsonLine): string | undefined => {
  if (line.type === "turn.failed") {
    const error = line.error;
    return typeof error === "object" && error !== null ? nonEmpty((error as JsonLine).message) : undefined;
  }
  return line.type === "error" ? nonEmpty(line.message) : undefined;
};

export const VENDOR_ADAPTERS: Readonly<Record<Vendor, VendorAdapter>> = {
  claude: {
    terminal: claudeTerminal,
    // docs/decisions.md D-53: the last system/init or result carries the session id.
    sessionId: (line) =>
      (line.type === "system" && line.subtype === "init") || line.type === "result"
        ? nonEmpty(line.session_id)
        : undefined,
    stateDir: ".claude",
    errorMessage: claudeErrorMessage,
  },
  codex: {
    // docs/decisions.md D-29: turn.failed ends the run too, unsuccessfully.
    terminal: (line) => {
      if (line.type === "turn.completed") return { success: true };
      if (line.type === "turn.failed") return { success: false };
      return undefined;
    },
    sessionId: (line) => (line.type === "thread.started" ? nonEmpty(line.thread_id) : undefined),
    stateDir: ".codex",
    errorMessage: codexError,
  },
  gemini: {
    // docs/decisions.md D-27: the result line's status decides.
    terminal: (line) => (line.type === "result" ? { success: line.status === "success" } : undefined),
    sessionId: (line) => (line.type === "init" ? nonEmpty(line.session_id) : undefined),
    stateDir: ".gemini",
    errorMessage: geminiErrorMessage,
  },
  // The last step's step_finish (reason stop) ends a successful run; errors end with the exit
  // code (docs/agent-clis.md, "opencode").
  opencode: {
    terminal: opencodeTerminal,
    sessionId: opencodeSessionId,
    errorMessage: opencodeErrorMessage,
  },
  exec: { terminal: claudeTerminal, sessionId: none, errorMessage: claudeErrorMessage },
};

/** A line as a JSON object; undefined for blank, non-JSON or non-object lines. */
export function parseJsonLine(line: string): JsonLine | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as JsonLine)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The verdict when `line` is the vendor's terminal line (docs/supervisor.md#terminal-lines-and-exit-codes); else undefined. */
export function terminalVerdict(vendor: Vendor, line: string): TerminalVerdict | undefined {
  const parsed = parseJsonLine(line);
  return parsed === undefined ? undefined : VENDOR_ADAPTERS[vendor].terminal(parsed);
}

/** The session id `line` announces for this vendor (docs/decisions.md D-53); undefined when none. */
export function announcedSessionId(vendor: Vendor, line: string | JsonLine): string | undefined {
  const parsed = typeof line === "string" ? parseJsonLine(line) : line;
  return parsed === undefined ? undefined : VENDOR_ADAPTERS[vendor].sessionId(parsed);
}

/** The CLI's own error message this line carries, if any (see VendorAdapter.errorMessage). */
export function cliErrorMessage(vendor: Vendor, line: string | JsonLine): string | undefined {
  const parsed = typeof line === "string" ? parseJsonLine(line) : line;
  return parsed === undefined ? undefined : VENDOR_ADAPTERS[vendor].errorMessage?.(parsed);
}

/** The vendor's conversation state directory relative to $HOME, if it keeps one. */
export function conversationStateDir(vendor: Vendor): string | undefined {
  return VENDOR_ADAPTERS[vendor].stateDir;
}
