/**
 * gemini: what the CLI needs before its first run (docs/agent-clis.md, "gemini").
 *
 * - `$HOME/.gemini/settings.json` selects API-key auth (with a custom base URL and no selected
 *   auth type the CLI exits 41 "Invalid auth method selected."), turns off usage statistics (the
 *   Clearcut logger resolves play.googleapis.com otherwise), telemetry and update checks, and
 *   bounds the retries of a model request (the CLI's default is 10 attempts with 5–30 s backoff, so
 *   a 429 cost minutes; a 401 is never retried).
 * - GEMINI_CLI_TRUST_WORKSPACE=true: headless gemini refuses an untrusted folder (exit 55) and,
 *   untrusted, silently drops `--yolo` back to the default approval mode. The variable rather than
 *   `--skip-trust` in the argv: it covers interactive runs, realtime turns and resumes alike, and a
 *   CLI version without the flag ignores a variable where it would reject an unknown flag.
 * - GOOGLE_GEMINI_BASE_URL (the variable the CLI reads) from the run's GOOGLE_GEMINI_BASE_URL or,
 *   failing that, GEMINI_BASE_URL (the project's name for the installation's Gemini endpoint).
 * - The definition's disallowed tools become deny rules of gemini's policy engine in
 *   `$HOME/.gemini/policies/agent-run.toml` (a denied tool is not even offered to the model; a
 *   `run_shell_command(<prefix>)` entry denies shell commands starting with that prefix). The file
 *   is always written, so a conversation restored from an earlier run cannot keep its rules.
 */
import type { Env } from "../../common/run-env.js";
import { jsonEnv } from "../../common/run-env.js";
import type { CliSetup, CliSetupInput } from "./types.js";

/**
 * Attempts per model request (the CLI's `general.maxAttempts`, default 10, at most 10): 3 rides out
 * a transient 429/5xx or a dropped connection and gives up on a persistent one within ~15 s.
 */
export const GEMINI_MAX_ATTEMPTS = 3;

/** The policy file the setup owns under `$HOME/.gemini/policies/`. */
export const GEMINI_POLICY_FILE = "agent-run.toml";

/** Highest priority a user-tier policy rule can have: nothing below the admin tier overrides it. */
const DENY_PRIORITY = 999;

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== "" ? value.trim() : undefined;
}

/** The endpoint the CLI should use, without trailing slashes; undefined for Google's own. */
export function geminiBaseUrl(env: Env): string | undefined {
  const configured = nonEmpty(env.GOOGLE_GEMINI_BASE_URL) ?? nonEmpty(env.GEMINI_BASE_URL);
  return configured?.replace(/\/+$/, "");
}

/** The auth type the settings select: Vertex AI when the run asks for it, else the API key. */
export function geminiAuthType(env: Env): "vertex-ai" | "gemini-api-key" {
  return env.GOOGLE_GENAI_USE_VERTEXAI?.trim().toLowerCase() === "true" ? "vertex-ai" : "gemini-api-key";
}

export function geminiSettings(env: Env): Record<string, unknown> {
  return {
    security: { auth: { selectedType: geminiAuthType(env) } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: {
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
      maxAttempts: GEMINI_MAX_ATTEMPTS,
    },
  };
}

/**
 * The definition's disallowed tools: AGENT_DISALLOWED_TOOLS (every run), else the realtime
 * recipe's `disallowed_tools`. Non-string and blank entries are dropped.
 */
export function disallowedTools(env: Env): string[] {
  const direct = jsonEnv(env, "AGENT_DISALLOWED_TOOLS");
  const recipe = jsonEnv(env, "AGENT_RECIPE") as { disallowed_tools?: unknown } | undefined;
  const list = Array.isArray(direct) ? direct : recipe?.disallowed_tools;
  if (!Array.isArray(list)) return [];
  return list.filter((t): t is string => typeof t === "string" && t.trim() !== "").map((t) => t.trim());
}

/** A TOML basic string: JSON's escapes are all valid TOML escapes. */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

const SHELL_PREFIX = /^run_shell_command\((.*)\)$/s;

/** One deny rule per disallowed tool, in gemini's policy TOML. */
export function geminiPolicyToml(tools: readonly string[]): string {
  const lines = [
    "# Written by the run pod's supervisor from the definition's disallowed_tools (docs/agent-clis.md).",
  ];
  for (const tool of tools) {
    const prefix = SHELL_PREFIX.exec(tool)?.[1]?.trim();
    lines.push("", "[[rule]]");
    if (prefix === undefined) lines.push(`toolName = ${tomlString(tool)}`);
    else {
      // `run_shell_command()` (no prefix) denies the whole shell tool.
      lines.push('toolName = "run_shell_command"');
      if (prefix !== "") lines.push(`commandPrefix = ${tomlString(prefix)}`);
    }
    lines.push('decision = "deny"', `priority = ${DENY_PRIORITY}`);
  }
  return `${lines.join("\n")}\n`;
}

export function geminiSetup(input: CliSetupInput): CliSetup {
  const env: Record<string, string | undefined> = { GEMINI_CLI_TRUST_WORKSPACE: "true" };
  const notices: string[] = [];
  const baseUrl = geminiBaseUrl(input.env);
  if (baseUrl !== undefined) {
    env.GOOGLE_GEMINI_BASE_URL = baseUrl;
    notices.push(`gemini: Gemini API at ${baseUrl}`);
  }
  const authType = geminiAuthType(input.env);
  if (authType === "gemini-api-key" && nonEmpty(input.env.GEMINI_API_KEY) === undefined) {
    if (nonEmpty(input.env.GOOGLE_API_KEY) !== undefined) {
      env.GEMINI_API_KEY = input.env.GOOGLE_API_KEY;
      notices.push("gemini: GEMINI_API_KEY taken from GOOGLE_API_KEY");
    } else {
      notices.push("gemini: GEMINI_API_KEY is not set; the CLI will exit 41 before any model call");
    }
  }
  if (input.env.GEMINI_CLI_HOME !== undefined) {
    // The settings written here and the conversation save/restore both use $HOME/.gemini.
    env.GEMINI_CLI_HOME = undefined;
    notices.push(
      `gemini: GEMINI_CLI_HOME (${input.env.GEMINI_CLI_HOME}) is ignored; gemini keeps its state in ${input.home}/.gemini`,
    );
  }
  const denied = disallowedTools(input.env);
  if (denied.length > 0) notices.push(`gemini: denied tools: ${denied.join(", ")}`);
  return {
    env,
    files: [
      {
        path: `${input.home}/.gemini/settings.json`,
        content: `${JSON.stringify(geminiSettings(input.env), null, 2)}\n`,
      },
      { path: `${input.home}/.gemini/policies/${GEMINI_POLICY_FILE}`, content: geminiPolicyToml(denied) },
    ],
    notices,
  };
}
