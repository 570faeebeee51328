/**
 * The agent CLIs this release is tested with: one place names each vendor's npm package and the
 * exact version the end-to-end tests run (test/integration/real-clis) and the init installs by
 * default. docs/agent-clis.md is the compatibility table for these versions.
 *
 * An installation overrides a version with the controller setting named in `versionSetting`
 * (docs/agent-clis.md); the Job builder hands the effective version to the init as
 * AGENT_CLI_VERSION.
 */
import { routeModel, type Vendor } from "./routing.js";

export type CliVendor = Exclude<Vendor, "exec">;

export interface AgentCli {
  /** The npm package that provides the CLI. */
  package: string;
  /** The version the tests run and the init installs unless overridden. */
  version: string;
  /** The executable the package puts on PATH. */
  binary: string;
  /** Controller setting (env on the Deployment) that overrides `version` for an installation. */
  versionSetting: string;
}

export const AGENT_CLIS: Readonly<Record<CliVendor, AgentCli>> = {
  claude: {
    package: "@anthropic-ai/claude-code",
    version: "2.1.328",
    binary: "claude",
    versionSetting: "CLAUDE_CLI_VERSION",
  },
  codex: {
    package: "@openai/codex",
    version: "0.169.0",
    binary: "codex",
    versionSetting: "CODEX_CLI_VERSION",
  },
  gemini: {
    package: "@google/gemini-cli",
    version: "0.61.0",
    binary: "gemini",
    versionSetting: "GEMINI_CLI_VERSION",
  },
  opencode: {
    package: "opencode-ai",
    version: "1.18.33",
    binary: "opencode",
    versionSetting: "OPENCODE_CLI_VERSION",
  },
};

export const CLI_VENDORS = Object.keys(AGENT_CLIS) as CliVendor[];

/** `<package>@<version>`, what `npm install` is given. */
export function cliPackageSpec(vendor: CliVendor, version: string = AGENT_CLIS[vendor].version): string {
  return `${AGENT_CLIS[vendor].package}@${version}`;
}

/** The model APIs whose base URL an installation can point the run pods' CLIs at (proxies, gateways). */
export type ModelApiFamily = "anthropic" | "openai" | "gemini";

/** opencode's provider ids (`opencode/<provider>/<model>`) for the three model APIs. */
const OPENCODE_PROVIDERS: Readonly<Record<string, ModelApiFamily>> = {
  anthropic: "anthropic",
  openai: "openai",
  google: "gemini",
};

/**
 * The model API a model id calls: claude's, codex's and gemini's own, opencode's by the provider its
 * id names (bare `opencode` picks its default from the keys it finds, and a run has the Anthropic
 * one); undefined for exec and for an opencode provider other than the three.
 */
export function modelApiFamilyOf(model: string): ModelApiFamily | undefined {
  switch (routeModel(model)) {
    case "claude":
      return "anthropic";
    case "codex":
      return "openai";
    case "gemini":
      return "gemini";
    case "exec":
      return undefined;
    case "opencode": {
      const inner = model.toLowerCase().replace(/^opencode\/?/, "");
      if (inner === "") return "anthropic";
      const slash = inner.indexOf("/");
      const provider = slash === -1 ? inner : inner.slice(0, slash);
      return Object.hasOwn(OPENCODE_PROVIDERS, provider) ? OPENCODE_PROVIDERS[provider] : undefined;
    }
  }
}

/**
 * Per model API: the controller setting (env on the Deployment) and the variable the `agent`
 * container gets, the one the CLIs or their setups read (docs/agent-clis.md "Installation settings").
 */
export const AGENT_BASE_URL_SETTINGS: Readonly<
  Record<ModelApiFamily, { setting: string; variable: string }>
> = {
  anthropic: { setting: "AGENT_ANTHROPIC_BASE_URL", variable: "ANTHROPIC_BASE_URL" },
  openai: { setting: "AGENT_OPENAI_BASE_URL", variable: "OPENAI_BASE_URL" },
  gemini: { setting: "AGENT_GEMINI_BASE_URL", variable: "GOOGLE_GEMINI_BASE_URL" },
};

export const MODEL_API_FAMILIES = Object.keys(AGENT_BASE_URL_SETTINGS) as ModelApiFamily[];

/** An exact npm version (semver: `1.2.3`, optionally `-pre.1` and `+build`), what a version setting accepts. */
export const EXACT_VERSION =
  /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
