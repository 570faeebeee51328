/**
 * opencode: what the CLI needs before its first run (docs/agent-clis.md, "opencode").
 *
 * - `$HOME/.config/opencode/opencode.json` (the global config the CLI always loads):
 *   - the installation's endpoints as provider base URLs: `anthropic` at ANTHROPIC_BASE_URL + `/v1`
 *     (the variable holds Claude Code's form, without `/v1`, while opencode's Anthropic client
 *     appends only `/messages`; opencode would also read the variable itself, in its own form, and
 *     post to `<url>/messages`), `openai` at OPENAI_BASE_URL (already with `/v1`), `google` at
 *     GOOGLE_GEMINI_BASE_URL (or GEMINI_BASE_URL) + `/v1beta`;
 *   - the run's model declared under its provider, so a model id missing from the catalog the CLI
 *     was built with still runs (undeclared, opencode 1.18 fails with "Unexpected server error");
 *   - the session-title agent disabled: it would send a second model request per run (to the
 *     provider's small model) that costs tokens and takes a scripted answer in tests;
 *   - autoupdate off, sharing disabled.
 * - Next to it a package.json, package-lock.json and node_modules that already list
 *   `@opencode-ai/plugin`: opencode installs that package into every config directory at start-up,
 *   reaching registry.npmjs.org, unless the directory's lock file already lists it.
 * - Environment: the models.dev catalog fetch, autoupdate, sharing, LSP downloads and default
 *   plugins off (each reaches out to the network otherwise).
 * Keys stay in the environment, which opencode reads itself (ANTHROPIC_API_KEY, OPENAI_API_KEY,
 * GOOGLE_GENERATIVE_AI_API_KEY); the project's GEMINI_API_KEY is handed over as
 * GOOGLE_GENERATIVE_AI_API_KEY when the run has only that one (opencode 1.18 ignores it: "Google
 * Generative AI API key is missing"). Nothing here writes a secret to a file.
 */
import { join } from "node:path";
import type { Env } from "../../common/run-env.js";
import type { CliSetup, CliSetupInput } from "./types.js";

/** The CLI's environment additions: nothing it does on its own may leave the pod. */
export const OPENCODE_OFFLINE_ENV: Readonly<Record<string, string>> = {
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
};

/** The package opencode installs into each config directory unless its lock file lists it. */
export const OPENCODE_PLUGIN_PACKAGE = "@opencode-ai/plugin";

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== "" ? value.trim() : undefined;
}

const withoutTrailingSlashes = (url: string) => url.replace(/\/+$/, "");

/** Per opencode provider id: the base URL its client is given, from the run's endpoints; unset ones absent. */
export function opencodeBaseUrls(env: Env): Record<string, string> {
  const urls: Record<string, string> = {};
  const anthropic = nonEmpty(env.ANTHROPIC_BASE_URL);
  if (anthropic) urls.anthropic = `${withoutTrailingSlashes(anthropic)}/v1`;
  const openai = nonEmpty(env.OPENAI_BASE_URL);
  if (openai) urls.openai = withoutTrailingSlashes(openai);
  const google = nonEmpty(env.GOOGLE_GEMINI_BASE_URL) ?? nonEmpty(env.GEMINI_BASE_URL);
  if (google) urls.google = `${withoutTrailingSlashes(google)}/v1beta`;
  return urls;
}

/**
 * The run's model as opencode's `provider/model`, from AGENT_MODEL (`opencode/<provider>/<model>`);
 * undefined for bare `opencode` (the CLI picks its default) or a model without a provider.
 */
export function opencodeModel(env: Env): { provider: string; model: string } | undefined {
  const routed = nonEmpty(env.AGENT_MODEL)?.replace(/^opencode\//i, "") ?? "";
  const slash = routed.indexOf("/");
  if (slash <= 0 || slash === routed.length - 1) return undefined;
  return { provider: routed.slice(0, slash), model: routed.slice(slash + 1) };
}

export function opencodeConfig(env: Env): Record<string, unknown> {
  const provider: Record<string, { options?: { baseURL: string }; models?: Record<string, object> }> = {};
  for (const [id, baseURL] of Object.entries(opencodeBaseUrls(env))) provider[id] = { options: { baseURL } };
  const routed = opencodeModel(env);
  if (routed) {
    // Merged by opencode with the catalog's entry when it has one (prices, limits are kept).
    const entry = provider[routed.provider] ?? {};
    entry.models = { [routed.model]: {} };
    provider[routed.provider] = entry;
  }
  return {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    ...(Object.keys(provider).length > 0 ? { provider } : {}),
    agent: { title: { disable: true } },
  };
}

/** The variables added to the CLI's environment. */
export function opencodeEnv(env: Env): Record<string, string> {
  const added: Record<string, string> = { ...OPENCODE_OFFLINE_ENV };
  const geminiKey = nonEmpty(env.GEMINI_API_KEY);
  if (geminiKey && !nonEmpty(env.GOOGLE_GENERATIVE_AI_API_KEY))
    added.GOOGLE_GENERATIVE_AI_API_KEY = geminiKey;
  return added;
}

export function opencodeSetup(input: CliSetupInput): CliSetup {
  const dir = join(input.home, ".config", "opencode");
  const dependencies = { [OPENCODE_PLUGIN_PACKAGE]: "*" };
  const baseUrls = opencodeBaseUrls(input.env);
  return {
    env: opencodeEnv(input.env),
    files: [
      {
        path: join(dir, "opencode.json"),
        content: `${JSON.stringify(opencodeConfig(input.env), null, 2)}\n`,
      },
      { path: join(dir, "package.json"), content: `${JSON.stringify({ dependencies })}\n` },
      {
        path: join(dir, "package-lock.json"),
        content: `${JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies } } })}\n`,
      },
      // The directory's existence is what opencode checks first; the file only makes it exist.
      { path: join(dir, "node_modules", ".keep"), content: "" },
    ],
    notices: [
      `opencode: wrote ${join(dir, "opencode.json")} (${
        Object.keys(baseUrls).length > 0
          ? `endpoints: ${Object.entries(baseUrls)
              .map(([id, url]) => `${id}=${url}`)
              .join(", ")}`
          : "the providers' own endpoints"
      })`,
    ],
  };
}
