/**
 * What the supervisor does to a vendor's CLI before its first process starts, so that the CLI
 * works non-interactively and offline from the vendor's own services (docs/agent-clis.md): config
 * files it writes under $HOME and variables it adds to (or removes from) the CLI's environment.
 *
 * Each vendor's module is a pure function of the run's environment; `apply.ts` does the writing.
 */
import type { Env } from "../../common/run-env.js";

export interface CliSetupInput {
  /** The run pod's environment (the agent container's). */
  env: Env;
  /** $HOME of the run (the agent volume). */
  home: string;
  /** The workspace the CLI runs in. */
  workspace: string;
}

export interface CliConfigFile {
  /** Absolute path (under `home`). */
  path: string;
  content: string;
  /** Default 0o600: config files may name endpoints and settings only the run should see. */
  mode?: number;
  /** Written only when nothing is at `path` yet (a file the init put there wins). */
  ifAbsent?: boolean;
}

export interface CliSetup {
  /** Added to the CLI's environment; `undefined` removes a variable. */
  env: Env;
  /** Written before the first CLI process starts (parents created, existing files replaced). */
  files: CliConfigFile[];
  /** Lines for the supervisor's log (what was configured, never a secret). */
  notices: string[];
}

export const NO_SETUP: CliSetup = { env: {}, files: [], notices: [] };
