import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** How to start one control-plane component; kept in the state file so another process can restart it. */
export interface ProcessSpec {
  name: string;
  bin: string;
  args: string[];
  logFile: string;
}

export interface RunningProcess {
  name: string;
  /** The pid, which is also the process-group id (every component is a group leader). */
  pid: number;
  logFile: string;
  child?: ChildProcess;
}

/**
 * Starts a component as the leader of its own process group (detached), with stdout and stderr
 * appended to its log file, so that stopping the group also stops anything it forked.
 */
export function startProcess(spec: ProcessSpec): RunningProcess {
  const fd = openSync(spec.logFile, "a");
  try {
    const child = spawn(spec.bin, spec.args, { detached: true, stdio: ["ignore", fd, fd] });
    if (child.pid === undefined) {
      throw new Error(`could not start ${spec.name} (${spec.bin}); see ${spec.logFile}`);
    }
    // The plane outlives nothing it does not own, but it must not keep the Node event loop alive either.
    child.unref();
    child.on("error", () => {});
    return { name: spec.name, pid: child.pid, logFile: spec.logFile, child };
  } finally {
    closeSync(fd);
  }
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

async function waitGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return true;
    await sleep(50);
  }
  return !groupAlive(pgid);
}

/** SIGTERM to the whole group, then SIGKILL after the grace period; resolves once the group is gone. */
export async function stopGroup(pgid: number, graceMs = 5_000): Promise<void> {
  signalGroup(pgid, "SIGTERM");
  if (await waitGone(pgid, graceMs)) return;
  signalGroup(pgid, "SIGKILL");
  if (await waitGone(pgid, 10_000)) return;
  throw new Error(`process group ${pgid} survived SIGKILL`);
}
