/**
 * The agent container's first process is the witness, a Node program: PID 1 of the container,
 * which the kernel hands every orphaned process of the agent's tree, and Node can only reap the
 * children it spawned itself (libuv waits for their pids alone; there is no `waitpid(-1)`). A CLI's
 * tool processes that outlive their parent would stay zombies for the session's life. So the
 * witness runs the supervisor under `ai-agent-reaper` (tini, statically linked, shipped in the
 * agent image and copied into `$HOME/bin` by the init) as a child subreaper (`-s`): orphans of the
 * supervisor's tree go to it and are reaped. It forwards SIGTERM/SIGINT to the supervisor and exits
 * with its code (128 + n for signal n), so nothing else changes (docs/run-pod.md, "PID 1").
 */
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { join } from "node:path";
import type { Env } from "../common/run-env.js";

export const REAPER_NAME = "ai-agent-reaper";

/** Where the init puts the reaper: beside the supervisor and the witness. */
export function reaperPath(env: Env): string {
  return join(env.HOME || "/agent", "bin", REAPER_NAME);
}

/** The reaper at `path` if it is an executable file there, else undefined. */
export async function findReaper(path: string): Promise<string | undefined> {
  try {
    await access(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** The command run under the reaper as a child subreaper; unchanged without one. */
export function underReaper(
  file: string,
  args: readonly string[],
  reaper: string | undefined,
): { file: string; args: string[] } {
  return reaper === undefined
    ? { file, args: [...args] }
    : { file: reaper, args: ["-s", "--", file, ...args] };
}
