/**
 * codex: what the CLI needs before its first run (docs/agent-clis.md, "codex").
 *
 * codex takes its endpoint only from `$CODEX_HOME/config.toml` (never from OPENAI_BASE_URL) and its
 * key from CODEX_API_KEY (never from OPENAI_API_KEY). The setup writes a config.toml that:
 * - selects a model provider of its own (`openai-run`) whose base URL is OPENAI_BASE_URL when the
 *   run sets it (the installation's gateway or the tests' local server), else OpenAI's. The
 *   built-in `openai` provider cannot be given retry limits, and with it the CLI first tries a
 *   WebSocket and, with the network down, retries for ever ("Reconnecting... waiting for network");
 * - bounds the retries, so a rejected key, a rate limit or an unreachable endpoint ends the run
 *   with `turn.failed` within seconds instead of burning the deadline;
 * - turns off the update check, analytics and plugins (the plugin catalog is what reaches out to
 *   the network otherwise).
 * The key stays in the environment (the provider's `env_key`): CODEX_API_KEY, taken from
 * OPENAI_API_KEY when the run has only that one.
 */
import type { Env } from "../../common/run-env.js";
import type { CliSetup, CliSetupInput } from "./types.js";

/** The model provider id the config defines and selects. */
export const CODEX_PROVIDER_ID = "openai-run";
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/**
 * Retries per model request (HTTP) and per stream: codex's defaults are 4 and 5, and with 5 stream
 * retries a rejected key alone costs ~11 s; 2 and 2 still ride out a transient 5xx or 429.
 */
export const CODEX_REQUEST_MAX_RETRIES = 2;
export const CODEX_STREAM_MAX_RETRIES = 2;
/**
 * 10 minutes, twice codex's own default: a reasoning model may say nothing for minutes before its
 * first event, and every hop of a model call keeps silence open at least this long (the model
 * gateway's idle timeout is at least 10 minutes, docs/gateway.md#timeouts), so codex is never the
 * hop that gives up on an answer still coming.
 */
export const CODEX_STREAM_IDLE_TIMEOUT_MS = 600_000;

/** A TOML basic string: quotes, backslashes and control characters escaped (no injection). */
export function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== "" ? value.trim() : undefined;
}

/** The base URL codex appends `/responses` to: OPENAI_BASE_URL without trailing slashes, else OpenAI's. */
export function codexBaseUrl(env: Env): string {
  const configured = nonEmpty(env.OPENAI_BASE_URL);
  return configured === undefined ? OPENAI_DEFAULT_BASE_URL : configured.replace(/\/+$/, "");
}

/** The URL for a log line: user and password replaced, so a credential in it is never logged. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1***@");
}

export function codexConfigToml(baseUrl: string): string {
  return [
    "# Written by the run pod's supervisor before the first codex process (docs/agent-clis.md).",
    `model_provider = ${tomlString(CODEX_PROVIDER_ID)}`,
    "check_for_update_on_startup = false",
    "",
    `[model_providers.${CODEX_PROVIDER_ID}]`,
    'name = "OpenAI"',
    `base_url = ${tomlString(baseUrl)}`,
    'env_key = "CODEX_API_KEY"',
    'env_key_instructions = "Give the run OPENAI_API_KEY or CODEX_API_KEY (resources.secrets)."',
    'wire_api = "responses"',
    `request_max_retries = ${CODEX_REQUEST_MAX_RETRIES}`,
    `stream_max_retries = ${CODEX_STREAM_MAX_RETRIES}`,
    `stream_idle_timeout_ms = ${CODEX_STREAM_IDLE_TIMEOUT_MS}`,
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[features]",
    "plugins = false",
    "unbounded_connection_retries = false",
    "",
  ].join("\n");
}

export function codexSetup(input: CliSetupInput): CliSetup {
  const env: Record<string, string | undefined> = {};
  const notices: string[] = [];
  const baseUrl = codexBaseUrl(input.env);
  notices.push(`codex: model provider ${CODEX_PROVIDER_ID} at ${withoutCredentials(baseUrl)}`);
  if (nonEmpty(input.env.CODEX_API_KEY) === undefined && nonEmpty(input.env.OPENAI_API_KEY) !== undefined) {
    env.CODEX_API_KEY = input.env.OPENAI_API_KEY;
    notices.push("codex: CODEX_API_KEY taken from OPENAI_API_KEY");
  }
  if (input.env.CODEX_HOME !== undefined) {
    // The conversation save and restore keep $HOME/.codex; a CODEX_HOME elsewhere would also
    // skip the config written here.
    env.CODEX_HOME = undefined;
    notices.push(
      `codex: CODEX_HOME (${input.env.CODEX_HOME}) is ignored; codex keeps its state in ${input.home}/.codex`,
    );
  }
  return {
    env,
    files: [{ path: `${input.home}/.codex/config.toml`, content: codexConfigToml(baseUrl) }],
    notices,
  };
}
