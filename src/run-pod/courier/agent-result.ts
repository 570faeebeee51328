/**
 * Waiting for the agent's result: the supervisor writes its exit code to `$HOME/run/exit-code`
 * (temp file + rename, so a file that exists is complete) as its very last act. The courier polls
 * for it, bounded by AGENT_DEADLINE_MS + 5 s (OQ-48).
 */
import { readFile } from "node:fs/promises";

export type AgentResult =
  | { state: "exited"; code: number }
  /** The file exists but holds no integer: treated as a failed agent, never delivered. */
  | { state: "unreadable"; content: string }
  | { state: "timeout" };

export interface WaitOptions {
  path: string;
  /** Undefined waits without bound (no AGENT_DEADLINE_MS: the Job's deadline ends the pod). */
  waitMs: number | undefined;
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const DEFAULT_POLL_MS = 500;

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitForAgentResult(options: WaitOptions): Promise<AgentResult> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const until = options.waitMs === undefined ? Number.POSITIVE_INFINITY : now() + options.waitMs;
  for (;;) {
    const content = await readIfPresent(options.path);
    if (content !== undefined) return parseExitCode(content);
    const left = until - now();
    if (left <= 0) return { state: "timeout" };
    await sleep(Math.min(pollMs, left));
  }
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export function parseExitCode(content: string): AgentResult {
  const text = content.trim();
  return /^-?\d+$/.test(text)
    ? { state: "exited", code: Number(text) }
    : { state: "unreadable", content: text };
}
