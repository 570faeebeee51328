/**
 * One agent CLI process, start to finish (docs/supervisor.md#order-of-one-interactive-run): spawn it with stdin from
 * /dev/null (docs/decisions.md D-58), stream its stdout and stderr line by line, notice its first terminal line,
 * and end it by the rules of the grace period and the deadline. The interactive supervisor runs
 * one of these per run; the realtime supervisor runs one per turn.
 *
 * It reports, it does not emit: lifecycle events, file events and exit bookkeeping belong to the
 * caller. Every line the child printed before its stdout closed (or within the EOF wait after it
 * exited) has been handed to `onStdoutLine` when the returned promise resolves.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import type { Readable } from "node:stream";
import type { TerminalVerdict } from "../../core/cli/vendors.js";
import type { JsonLineLogger } from "../../log.js";
import type { Env } from "../common/run-env.js";
import { LineSplitter } from "./line-splitter.js";
import { longTimer } from "./long-timer.js";

/** How long the streams may stay open after the process exited (grandchildren holding the pipe). */
export const EOF_WAIT_MS = 2000;

export interface RunningChild {
  readonly pid: number | undefined;
  /** Sends a signal to the agent process if it is still running. */
  signal(signal: NodeJS.Signals): void;
}

export interface ChildRunOptions {
  /** The executable to run, already resolved (see findExecutable). */
  file: string;
  /** The command as given; argv[0] is the name the CLI sees, the rest its arguments. */
  argv: readonly string[];
  env: Env;
  cwd?: string;
  /** The vendor's terminal-line rule (core/vendors.ts). */
  isTerminal(line: string): TerminalVerdict | undefined;
  /** Wait after a terminal line, and between SIGTERM, SIGKILL and giving up. */
  graceMs: number;
  /** Epoch ms at which a child that has neither exited nor printed its terminal line is stopped. */
  deadlineAt?: number;
  /** The grace of the deadline's stop, when the time left to report is shorter than `graceMs`. */
  deadlineGraceMs?: number;
  /** Called once the process exists, before any of its lines. */
  onSpawned?(child: RunningChild): void;
  onStdoutLine(line: string): void;
  onStderrLine(line: string): void;
  log: JsonLineLogger;
  /** Test seam; default EOF_WAIT_MS. */
  eofWaitMs?: number;
}

export type ChildOutcome =
  /** The process could not be started (no agent/started follows). */
  | { kind: "spawn-failed"; error: string }
  /** The process exited; its own code (128 + n when killed by signal n) and its first terminal line, if any. */
  | { kind: "exited"; exitCode: number; terminal?: TerminalVerdict }
  /** A terminal line came but the process outlived the grace: stopped, code from the verdict. */
  | { kind: "stopped-after-terminal"; exitCode: 0 | 1; terminal: TerminalVerdict }
  /** Neither exit nor terminal line before the deadline: stopped, code 124. */
  | { kind: "deadline"; exitCode: 124 };

export const DEADLINE_EXIT_CODE = 124;

type Exit = { code: number | null; signal: NodeJS.Signals | null };
const TIMED_OUT = Symbol("timed out");

/** The code a finished process reports: its exit status, or 128 + n when signal n ended it. */
export function exitStatus({ code, signal }: Exit): number {
  if (code !== null) return code;
  const n = signal === null ? undefined : osConstants.signals[signal];
  return n === undefined ? 1 : 128 + n;
}

export async function runChild(options: ChildRunOptions): Promise<ChildOutcome> {
  const { log, graceMs } = options;
  let child: ChildProcessByStdio<null, Readable, Readable>;
  try {
    child = spawn(options.file, options.argv.slice(1), {
      argv0: options.argv[0],
      env: definedOnly(options.env),
      cwd: options.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    return { kind: "spawn-failed", error: errorText(err) };
  }
  const exited = new Promise<Exit>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once("spawn", () => resolve(undefined));
    child.once("error", resolve);
  });
  if (spawnError !== undefined) return { kind: "spawn-failed", error: errorText(spawnError) };
  // Later errors are failed kill() calls on a process that is already gone.
  child.on("error", (err) => log.warn("signalling the agent process failed", { error: errorText(err) }));

  const running: RunningChild = {
    pid: child.pid,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
  options.onSpawned?.(running);

  let terminal: TerminalVerdict | undefined;
  let sawTerminal: (verdict: TerminalVerdict) => void = () => {};
  const terminalSeen = new Promise<TerminalVerdict>((resolve) => {
    sawTerminal = resolve;
  });
  const stdout = new LineSplitter(
    (line) => {
      options.onStdoutLine(line);
      if (terminal !== undefined) return;
      terminal = options.isTerminal(line);
      if (terminal !== undefined) sawTerminal(terminal);
    },
    (max) => log.error(`agent stdout line longer than ${max} bytes; no further stdout is forwarded`),
  );
  const stderr = new LineSplitter(
    (line) => options.onStderrLine(line),
    (max) => log.error(`agent stderr line longer than ${max} bytes; no further stderr is forwarded`),
  );
  const stdoutDone = pump(child.stdout, stdout);
  const stderrDone = pump(child.stderr, stderr);

  const deadline = options.deadlineAt === undefined ? undefined : longTimer(options.deadlineAt - Date.now());
  const first = await Promise.race([
    exited.then((exit) => ({ kind: "exit" as const, exit })),
    terminalSeen.then((verdict) => ({ kind: "terminal" as const, verdict })),
    ...(deadline ? [deadline.promise.then(() => ({ kind: "deadline" as const }))] : []),
  ]);
  deadline?.cancel();

  let outcome: ChildOutcome;
  if (first.kind === "exit") {
    outcome = { kind: "exited", exitCode: exitStatus(first.exit) };
  } else if (first.kind === "terminal") {
    const exit = await within(exited, graceMs);
    if (exit !== TIMED_OUT) {
      outcome = { kind: "exited", exitCode: exitStatus(exit), terminal: first.verdict };
    } else {
      log.warn(`agent printed its terminal line but is still running after ${graceMs} ms; stopping it`);
      await stop(child, exited, graceMs, log);
      outcome = {
        kind: "stopped-after-terminal",
        exitCode: first.verdict.success ? 0 : 1,
        terminal: first.verdict,
      };
    }
  } else {
    const stopGraceMs = options.deadlineGraceMs ?? graceMs;
    log.error(`agent deadline reached (AGENT_DEADLINE_MS); stopping the agent`, { graceMs: stopGraceMs });
    await stop(child, exited, stopGraceMs, log);
    outcome = { kind: "deadline", exitCode: DEADLINE_EXIT_CODE };
  }

  // Grandchildren may hold the pipes open: wait a bounded time, then stop reading.
  const eof = await within(Promise.all([stdoutDone, stderrDone]), options.eofWaitMs ?? EOF_WAIT_MS);
  if (eof === TIMED_OUT) {
    log.warn("agent output still open after the process ended; not waiting for it");
    child.stdout.destroy();
    child.stderr.destroy();
    stdout.end();
    stderr.end();
  }
  // A terminal line read only after the exit (the usual case for a fast CLI) still counts.
  if (outcome.kind === "exited" && terminal !== undefined) return { ...outcome, terminal };
  return outcome;
}

/** SIGTERM, wait grace, SIGKILL, wait grace. */
async function stop(
  child: ChildProcessByStdio<null, Readable, Readable>,
  exited: Promise<Exit>,
  graceMs: number,
  log: JsonLineLogger,
): Promise<void> {
  if (!isRunning(child)) return;
  child.kill("SIGTERM");
  if ((await within(exited, graceMs)) !== TIMED_OUT) return;
  log.warn(`agent still running ${graceMs} ms after SIGTERM; sending SIGKILL`);
  child.kill("SIGKILL");
  if ((await within(exited, graceMs)) === TIMED_OUT) {
    log.error(`agent still running ${graceMs} ms after SIGKILL; giving up on it`);
  }
}

function isRunning(child: { exitCode: number | null; signalCode: NodeJS.Signals | null }): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Feeds a stream into a splitter; resolves when the stream ended (the last line was delivered). */
function pump(stream: Readable, splitter: LineSplitter): Promise<void> {
  return new Promise((resolve) => {
    // After an overflow the data is still read (and discarded) so the agent never blocks writing.
    stream.on("data", (chunk: Buffer) => splitter.push(chunk));
    stream.once("end", () => {
      splitter.end();
      resolve();
    });
    // A stream closed without its end (destroyed, errored) still hands over its last partial line.
    const closed = () => {
      splitter.end();
      resolve();
    };
    stream.once("close", closed);
    stream.once("error", closed);
  });
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  const t = longTimer(ms);
  try {
    return await Promise.race<T | typeof TIMED_OUT>([promise, t.promise.then(() => TIMED_OUT)]);
  } finally {
    t.cancel();
  }
}

function definedOnly(env: Env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
