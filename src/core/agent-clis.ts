/**
 * The agent CLIs this release is tested with: one place names each vendor's npm package and the
 * exact version the end-to-end tests run (test/integration/real-clis) and the init installs by
 * default. docs/agent-clis.md is the compatibility table for these versions.
 *
 * An installation overrides a version with the controller setting named in `versionSetting`
 * (docs/agent-clis.md); the Job builder hands the effective version to the init as
 * AGENT_CLI_VERSION.
 */
import type { Vendor } from "./routing.js";

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
