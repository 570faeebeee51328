/**
 * The vendor's CLI setup (types.ts), chosen by the run's vendor, and its application: files
 * written under $HOME, the environment the CLI processes get.
 */
import { chmod, lstat, mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Vendor } from "../../../core/cli/routing.js";
import type { Env } from "../../common/run-env.js";
import { ensureCli } from "../cli-install.js";
import { claudeSetup } from "./claude.js";
import { codexSetup } from "./codex.js";
import { geminiSetup } from "./gemini.js";
import { opencodeSetup } from "./opencode.js";
import { type CliSetup, type CliSetupInput, NO_SETUP } from "./types.js";

export type { CliConfigFile, CliSetup, CliSetupInput } from "./types.js";

const SETUPS: Readonly<Record<Vendor, (input: CliSetupInput) => CliSetup>> = {
  claude: claudeSetup,
  codex: codexSetup,
  gemini: geminiSetup,
  opencode: opencodeSetup,
  exec: () => NO_SETUP,
};

export function cliSetup(vendor: Vendor, input: CliSetupInput): CliSetup {
  return SETUPS[vendor](input);
}

/** The CLI's environment: the run's, with the setup's additions and removals. */
export function cliEnv(env: Env, setup: CliSetup): Env {
  return { ...env, ...setup.env };
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

/** Writes the setup's files; throws with the path in the message when one cannot be written. */
export async function writeCliFiles(setup: CliSetup): Promise<void> {
  for (const file of setup.files) {
    try {
      await mkdir(dirname(file.path), { recursive: true, mode: 0o700 });
      if (file.ifAbsent && (await exists(file.path))) continue;
      await writeFile(file.path, file.content, { mode: file.mode ?? 0o600 });
      await chmod(file.path, file.mode ?? 0o600);
    } catch (err) {
      throw new Error(`cannot write ${file.path}: ${(err as Error).message}`);
    }
  }
}

/**
 * Sets the vendor's CLI up for this run: writes its files and returns the environment its
 * processes get, or why that failed (the run then fails before the CLI starts).
 */
export async function prepareCli(
  vendor: Vendor,
  input: CliSetupInput,
  log: (message: string) => void,
): Promise<{ env: Env } | { error: string }> {
  // The CLI first: preinstalled on the Station image, or installed now (cli-install.ts).
  const installed = await ensureCli(vendor, input.env, input.home, log);
  if ("error" in installed) return installed;
  const setup = cliSetup(vendor, input);
  for (const notice of setup.notices) log(notice);
  try {
    await writeCliFiles(setup);
  } catch (err) {
    return { error: `${vendor} setup failed: ${(err as Error).message}` };
  }
  return { env: cliEnv(input.env, setup) };
}
