/**
 * The vendor's CLI on the run's PATH before its first process (docs/agent-clis.md "How a run gets
 * its CLI"). Runs in the `agent` container, on the Station's image, as the agent's user:
 *
 * - a CLI already on PATH (a Station image with it preinstalled) is used as is; its version is
 *   logged (from the npm package it belongs to, else `<binary> --version`, bounded);
 * - a missing one is installed with `npm install --global --prefix $HOME/.local
 *   <package>@$AGENT_CLI_VERSION` (the version the controller pins, src/core/cli/agent-clis.ts), then
 *   its version is logged.
 *
 * Only when AGENT_CLI_VERSION is set (the controller sets it on every CLI run): without it nothing
 * is installed and a missing CLI is the supervisor's `not-found`, as before.
 *
 * Here rather than in the init container: the init runs AGENT_IMAGE, so it can neither see what the
 * Station image has on its PATH nor run the npm and Node the Station image has (the CLIs run on
 * that Node too); and installing there would shadow a preinstalled CLI (`/agent/.local/bin` comes
 * first on PATH). npm gets a minimal environment, never the run's secrets.
 */
import { spawn } from "node:child_process";
import { readFile, realpath } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AGENT_CLIS, type CliVendor, cliPackageSpec } from "../../core/cli/agent-clis.js";
import type { Vendor } from "../../core/cli/routing.js";
import type { Env } from "../common/run-env.js";
import { findExecutable } from "./command-path.js";

/** An install that takes longer has hung (a cold install from the public registry takes 10–60 s). */
export const INSTALL_TIMEOUT_MS = 10 * 60_000;
/** `<binary> --version` of a preinstalled CLI (gemini's takes 2–4 s on a busy node). */
export const VERSION_TIMEOUT_MS = 10_000;

/** What npm may see of the run's environment: where to look and install, and how to reach a registry. */
const PASSED_TO_NPM =
  /^(npm_config_.+|NPM_CONFIG_.+|HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy|NODE_EXTRA_CA_CERTS)$/;

export function installerEnv(env: Env, home: string): Record<string, string> {
  const out: Record<string, string> = {
    PATH: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: home,
    // npm would otherwise ask the registry whether it is itself up to date.
    npm_config_update_notifier: "false",
  };
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && PASSED_TO_NPM.test(name)) out[name] = value;
  }
  return out;
}

export function npmInstallArgv(vendor: CliVendor, version: string, home: string): string[] {
  return [
    "npm",
    "install",
    "--global",
    "--prefix",
    join(home, ".local"),
    "--no-audit",
    "--no-fund",
    cliPackageSpec(vendor, version),
  ];
}

export interface CommandResult {
  /** Exit code; null when killed (timeout) or it could not start. */
  code: number | null;
  /** Why it could not start, or that it timed out. */
  failure?: string;
  /** Its output lines (stdout and stderr), the last ones kept. */
  lines: string[];
}

export interface InstallDeps {
  run(argv: string[], env: Record<string, string>, cwd: string, timeoutMs: number): Promise<CommandResult>;
  findExecutable(name: string, pathVar: string | undefined): Promise<string | undefined>;
  /** The version recorded in the npm package `pkg` that `file` belongs to, or undefined. */
  packageVersion(file: string, pkg: string): Promise<string | undefined>;
  now(): number;
}

const KEEP_LINES = 40;

/** Runs a command in its own process group, stdin /dev/null, killing the group at the timeout. */
export function runCommand(
  argv: string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs: number,
): Promise<CommandResult> {
  return new Promise((resolve) => {
    const [file, ...args] = argv;
    const lines: string[] = [];
    let pending = "";
    let failure: string | undefined;
    const child = spawn(file ?? "", args, { env, cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const take = (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const l of parts) if (l.trim() !== "") lines.push(l.replace(/\r$/, ""));
      if (lines.length > KEEP_LINES) lines.splice(0, lines.length - KEEP_LINES);
    };
    child.stdout?.on("data", take);
    child.stderr?.on("data", take);
    const timer = setTimeout(() => {
      failure = `timed out after ${Math.round(timeoutMs / 1000)} s`;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }, timeoutMs);
    child.on("error", (err) => {
      failure = `cannot run ${file}: ${(err as NodeJS.ErrnoException).code ?? err.message}`;
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (pending.trim() !== "") lines.push(pending);
      resolve({ code: failure === undefined ? code : null, ...(failure ? { failure } : {}), lines });
    });
  });
}

/** Walks up from the executable's real path to the package.json naming `pkg` (at most 6 levels). */
export async function packageVersion(file: string, pkg: string): Promise<string | undefined> {
  let dir: string;
  try {
    dir = dirname(await realpath(file));
  } catch {
    return undefined;
  }
  for (let i = 0; i < 6; i++) {
    try {
      const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
      if (manifest?.name === pkg && typeof manifest.version === "string") return manifest.version;
    } catch {
      // No (readable) package.json here: keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return undefined;
}

export const defaultInstallDeps: InstallDeps = {
  run: runCommand,
  findExecutable,
  packageVersion,
  now: Date.now,
};

/**
 * npm's own account of a failure: its first `npm error` line that says something (not the code
 * line, not the pointer to its log file), else its last line.
 */
export function npmCause(lines: readonly string[]): string | undefined {
  const errors = lines.filter((l) => /^npm (error|ERR!)/.test(l));
  const telling = errors.find((l) => !/^npm (error|ERR!) (code|errno|A complete log|Log files)\b/.test(l));
  return (telling ?? errors[0] ?? lines.at(-1))?.trim();
}

/** `2.1.328`, or what `--version` printed, or why it could not tell. */
async function versionOf(
  vendor: CliVendor,
  file: string,
  npmEnv: Record<string, string>,
  home: string,
  deps: InstallDeps,
): Promise<string> {
  const fromPackage = await deps.packageVersion(file, AGENT_CLIS[vendor].package);
  if (fromPackage !== undefined) return fromPackage;
  const out = await deps.run([file, "--version"], npmEnv, home, VERSION_TIMEOUT_MS);
  const first = out.lines
    .find((l) => l.trim() !== "")
    ?.trim()
    .slice(0, 200);
  if (out.code === 0 && first !== undefined) return first;
  return `unknown (${file} --version ${out.failure ?? `exited with code ${out.code}`})`;
}

/**
 * Makes sure the vendor's CLI is on PATH (see the module comment); `{ error }` says why the run
 * cannot have it, in words that name the vendor, the package and npm's last line.
 */
export async function ensureCli(
  vendor: Vendor,
  env: Env,
  home: string,
  log: (message: string) => void,
  deps: InstallDeps = defaultInstallDeps,
): Promise<{ ok: true } | { error: string }> {
  const version = env.AGENT_CLI_VERSION?.trim();
  if (vendor === "exec" || version === undefined || version === "") return { ok: true };
  const { binary } = AGENT_CLIS[vendor];
  const npmEnv = installerEnv(env, home);
  const found = await deps.findExecutable(binary, env.PATH);
  if (found !== undefined) {
    const have = await versionOf(vendor, found, npmEnv, home, deps);
    const pinned = have === version ? "" : ` (the installation's version is ${version})`;
    log(`${vendor}: ${found} is on PATH, version ${have}${pinned}; not installing`);
    return { ok: true };
  }
  const spec = cliPackageSpec(vendor, version);
  if ((await deps.findExecutable("npm", env.PATH)) === undefined) {
    return {
      error: `${vendor}: ${binary} is not on PATH and npm is not either, so ${spec} cannot be installed: the Station image needs the ${binary} CLI preinstalled, or Node.js with npm (docs/agent-clis.md)`,
    };
  }
  const argv = npmInstallArgv(vendor, version, home);
  log(`${vendor}: ${binary} is not on PATH; installing ${spec}: ${argv.join(" ")}`);
  const started = deps.now();
  const result = await deps.run(argv, npmEnv, home, INSTALL_TIMEOUT_MS);
  for (const line of result.lines) log(`npm: ${line}`);
  if (result.code !== 0) {
    const why = result.failure ?? `npm exited with code ${result.code}`;
    const cause = npmCause(result.lines);
    return { error: `${vendor}: installing ${spec} failed: ${why}${cause ? `: ${cause}` : ""}` };
  }
  const installed = await deps.findExecutable(binary, env.PATH);
  if (installed === undefined) {
    return {
      error: `${vendor}: npm installed ${spec} but ${binary} is not on PATH ${env.PATH ?? ""} (expected in ${join(home, ".local", "bin")})`,
    };
  }
  const have = await versionOf(vendor, installed, npmEnv, home, deps);
  log(
    `${vendor}: installed ${installed}, version ${have}, in ${((deps.now() - started) / 1000).toFixed(1)} s`,
  );
  return { ok: true };
}
