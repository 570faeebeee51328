/**
 * `ai-agent-witness -- <command…>`: the `agent` container's first process (docs/security.md,
 * "The agent's result"). It starts as root with only SETUID, SETGID and KILL, runs the command (the
 * supervisor) as the agent's uid and gid, forwards SIGTERM and SIGINT to it, and records how it
 * ended in the result directory, which it makes writable by root alone: `exit-code` (`<n>\n`,
 * temp file + rename; 128 + n for a signal). Nothing the supervisor or the CLI runs can write
 * there, kill the witness or read its memory, so the courier learns the outcome from something the
 * agent cannot forge. The courier also holds a connection to `witness.sock`; the witness never
 * reads from it, and its closing tells the courier at once that the witness is gone, with or
 * without a result (a container killed as a whole, e.g. out of memory).
 */

import { spawn } from "node:child_process";
import { chmod, lstat, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { constants } from "node:os";
import { join } from "node:path";
import { runPodLogger } from "../common/log.js";
import type { Env } from "../common/run-env.js";
import { findReaper, REAPER_NAME, reaperPath, underReaper } from "./reaper.js";
import { DEFAULT_RESULT_DIR, RESULT_FILE, WITNESS_SOCKET } from "./result-dir.js";

/** The agent's uid and gid (the init hands HOME and the workspace to them). */
export const AGENT_UID = 1000;
export const AGENT_GID = 1000;

export interface WitnessSeams {
  stderr?: (line: string) => void;
  /** The process whose signals are forwarded; production: `process`. */
  signals?: NodeJS.EventEmitter;
  getuid?: () => number;
  /** Where to look for the reaper; default `$HOME/bin/ai-agent-reaper`. */
  reaper?: string;
}

export async function runWitness(argv: string[], env: Env, seams: WitnessSeams = {}): Promise<number> {
  const write = seams.stderr ?? ((l: string) => process.stderr.write(`${l}\n`));
  // Diagnostics are JSON lines like every run-pod program's (common/log.ts): they share the agent
  // container's log with the CLI's output, where `kubectl agent logs` shows plain lines as output.
  const diagnostics = runPodLogger("witness", write);
  const log = (line: string) => diagnostics.warn(line);
  if (argv[0] !== "--" || argv.length < 2) {
    write("[witness] usage: ai-agent-witness -- <command> [args…]");
    return 2;
  }
  const [file, ...args] = argv.slice(1) as [string, ...string[]];
  if ((seams.getuid ?? process.getuid ?? (() => -1))() !== 0) {
    // Without root the agent could write the result itself: refuse rather than pretend.
    log("must start as root (the Job gives the agent container runAsUser 0 with SETUID, SETGID and KILL)");
    return 1;
  }
  const dir = env.AGENT_RESULT_DIR || DEFAULT_RESULT_DIR;
  const problem = await rootOnlyDir(dir);
  if (problem !== undefined) {
    log(problem);
    return 1;
  }
  const watchers = new Set<Socket>();
  const server = createServer((socket) => {
    watchers.add(socket);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => watchers.delete(socket));
    socket.resume();
  });
  const socketPath = join(dir, WITNESS_SOCKET);
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  // The courier (another uid) connects; anyone may, the witness only ever closes it.
  await chmod(socketPath, 0o666);

  // Orphans of the agent's tree are reaped by the reaper, not left as zombies of this PID 1.
  const reaper = await findReaper(seams.reaper ?? reaperPath(env));
  if (reaper === undefined) log(`no ${REAPER_NAME} in $HOME/bin: orphaned processes are not reaped`);
  const command = underReaper(file, args, reaper);
  const code = await runAs(command.file, command.args, env, seams.signals ?? process, log);
  try {
    const tmp = join(dir, `.${RESULT_FILE}.tmp`);
    await writeFile(tmp, `${code}\n`, { mode: 0o644, flag: "w" });
    await rename(tmp, join(dir, RESULT_FILE));
  } catch (err) {
    log(`writing ${join(dir, RESULT_FILE)} failed: ${(err as Error).message}`);
  }
  for (const socket of watchers) socket.end();
  server.close();
  return code;
}

/** Makes `dir` root's alone (0755, owned by uid 0); why it cannot be, else undefined. */
async function rootOnlyDir(dir: string): Promise<string | undefined> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const before = await lstat(dir);
    if (!before.isDirectory()) return `${dir} is not a directory`;
    await chmod(dir, 0o755);
    const st = await lstat(dir);
    if (st.uid !== 0 || (st.mode & 0o022) !== 0) {
      return `${dir} cannot be made writable by root alone (owner uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)})`;
    }
    await rm(join(dir, RESULT_FILE), { force: true });
    return undefined;
  } catch (err) {
    return `preparing ${dir} failed: ${(err as Error).message}`;
  }
}

/** Runs the command as the agent's uid and gid; its exit code, 128 + n for signal n, 127 if it cannot start. */
function runAs(
  file: string,
  args: string[],
  env: Env,
  signals: NodeJS.EventEmitter,
  log: (line: string) => void,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(file, args, {
      uid: AGENT_UID,
      gid: AGENT_GID,
      env: env as NodeJS.ProcessEnv,
      stdio: "inherit",
    });
    const forward = (signal: NodeJS.Signals) => () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    const handlers = (["SIGTERM", "SIGINT"] as const).map((s) => [s, forward(s)] as const);
    for (const [s, h] of handlers) signals.on(s, h);
    let settled = false;
    const done = (code: number) => {
      if (settled) return;
      settled = true;
      for (const [s, h] of handlers) signals.off(s, h);
      resolve(code);
    };
    child.on("error", (err) => {
      log(`cannot start ${file}: ${err.message}`);
      done(127);
    });
    child.on("exit", (code, signal) => {
      if (signal !== null) log(`${file} was killed by ${signal}`);
      done(code ?? 128 + (constants.signals[signal as NodeJS.Signals] ?? 0));
    });
  });
}
