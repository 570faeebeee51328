/**
 * `$HOME/run/exit-code`: the supervisor's own note of its exit code, for a person or tool looking
 * at the agent volume. Nothing trusts it: the agent's uid can write it. The courier reads the
 * witness's record instead (src/run-pod/witness/, docs/security.md). Written through a temporary
 * file and a rename, so a reader never sees a half-written code. It is the last step of every run,
 * interactive or realtime, after the sink drain (drainThenWriteExitCode).
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { JsonLineLogger } from "../../log.js";
import { DRAIN_TIMEOUT_MS, type RunEmitter } from "../common/emitter.js";
import { type RunDeadline, tailShare } from "./deadline.js";

export function exitCodePath(home: string): string {
  return join(home, "run", "exit-code");
}

/** Writes `<code>\n`; throws what the filesystem threw. */
export async function writeExitCodeFile(home: string, exitCode: number): Promise<string> {
  const path = exitCodePath(home);
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${exitCode}\n`, { mode: 0o644 });
  await rename(tmp, path);
  return path;
}

/**
 * The end of a run once its terminal event is emitted: the sink queues get what is left of the
 * tail (at most DRAIN_TIMEOUT_MS), then the exit-code file is written. Neither an undrained queue
 * nor a failed write changes the run's exit code: both are logged, and `exitCode` is returned.
 */
export async function drainThenWriteExitCode(options: {
  emitter: Pick<RunEmitter, "drain" | "pending">;
  deadline: RunDeadline;
  home: string;
  exitCode: number;
  log: JsonLineLogger;
  now?: () => number;
}): Promise<number> {
  const { emitter, deadline, home, exitCode, log, now = Date.now } = options;
  const drainMs = tailShare(deadline, now(), DRAIN_TIMEOUT_MS);
  if (!(await emitter.drain(drainMs))) {
    log.warn(`sink queues not drained within ${drainMs} ms; undelivered events are lost`, {
      pending: emitter.pending,
    });
  }
  try {
    await writeExitCodeFile(home, exitCode);
  } catch (err) {
    log.error(`writing the exit-code file under ${home}/run failed: ${(err as Error).message}`);
  }
  return exitCode;
}
