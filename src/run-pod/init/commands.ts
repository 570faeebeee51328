/**
 * Running the init's external steps (git, installers, the package manager) and finding
 * executables on PATH. A child's stdout and stderr both go to the init's stderr, line by line and
 * redacted: the init's stdout carries only its events.
 */
import { spawn } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { join } from "node:path";
import type { LineWriter } from "../common/emitter.js";
import type { Env } from "../common/run-env.js";
import { redactUrlCredentials } from "./redact.js";

export interface Command {
  argv: readonly string[];
  env: Env;
  cwd?: string;
}

/** Resolves with the exit code: the child's own, 128 + signal number when killed, 127 when it cannot start. */
export type CommandRunner = (command: Command) => Promise<number>;

const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};

export function spawnRunner(stderr: LineWriter): CommandRunner {
  return ({ argv, env, cwd }) =>
    new Promise((resolvePromise) => {
      const [file, ...args] = argv;
      if (file === undefined) {
        resolvePromise(127);
        return;
      }
      const child = spawn(file, args, {
        env: env as NodeJS.ProcessEnv,
        ...(cwd !== undefined ? { cwd } : {}),
        stdio: ["ignore", "pipe", "pipe"],
      });
      const forward = lineForwarder(stderr);
      let failedToStart = false;
      child.stdout.on("data", forward.push);
      child.stderr.on("data", forward.push);
      child.on("error", (err) => {
        failedToStart = true;
        stderr(`[init] cannot run ${file}: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
      });
      child.on("close", (code, signal) => {
        forward.flush();
        if (failedToStart) resolvePromise(127);
        else if (code !== null) resolvePromise(code);
        else if (signal !== null) resolvePromise(128 + (SIGNALS[signal] ?? 1));
        else resolvePromise(127);
      });
    });
}

/** Splits chunks into lines (a child's two streams interleave by chunk, which is as good as a pod log gets). */
function lineForwarder(write: LineWriter): { push: (chunk: Buffer) => void; flush: () => void } {
  let pending = "";
  return {
    push: (chunk) => {
      pending += chunk.toString("utf8");
      let nl = pending.indexOf("\n");
      while (nl >= 0) {
        write(redactUrlCredentials(pending.slice(0, nl).replace(/\r$/, "")));
        pending = pending.slice(nl + 1);
        nl = pending.indexOf("\n");
      }
    },
    flush: () => {
      if (pending !== "") write(redactUrlCredentials(pending));
      pending = "";
    },
  };
}

/**
 * The first executable regular file named `name` in the PATH entries, the way a shell searches.
 * Checked here rather than with `command -v` so the answer is for the PATH the run env gives.
 */
export async function findOnPath(name: string, pathVar: string | undefined): Promise<string | undefined> {
  if (name.includes("/")) return undefined;
  for (const dir of (pathVar ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      if (!(await stat(candidate)).isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here: keep searching.
    }
  }
  return undefined;
}

/** A command line as logged: each argument shell-quoted when needed, credentials redacted. */
export function displayCommand(argv: readonly string[]): string {
  const quoted = argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`));
  return redactUrlCredentials(quoted.join(" "));
}
