/**
 * Waiting for the agent's result (docs/security.md, "The agent's result"): the witness, the
 * `agent` container's root process, records the supervisor's exit code in the result directory,
 * which only root can write; the agent's own uid cannot forge or remove it. The courier polls for
 * it, bounded by AGENT_DEADLINE_MS + 5 s (docs/decisions.md D-48), and holds a connection to the witness's socket:
 * when that connection closes the witness is gone, so a missing result then is final at once
 * instead of at the deadline.
 */
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { readRecordedResult, WITNESS_SOCKET } from "../witness/result-dir.js";

export type AgentResult =
  | { state: "exited"; code: number }
  /** A record the witness did not write (or not an exit code): never delivered. */
  | { state: "untrusted"; why: string }
  /** The witness ended without recording a result (its container was killed as a whole). */
  | { state: "gone" }
  | { state: "timeout" };

export interface WaitOptions {
  dir: string;
  /** Undefined waits without bound (no AGENT_DEADLINE_MS: the Job's deadline ends the pod). */
  waitMs: number | undefined;
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Whose record is trusted; root in a pod. */
  ownerUid?: number;
}

export const DEFAULT_POLL_MS = 500;

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitForAgentResult(options: WaitOptions): Promise<AgentResult> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const until = options.waitMs === undefined ? Number.POSITIVE_INFINITY : now() + options.waitMs;
  const link = new WitnessLink(join(options.dir, WITNESS_SOCKET));
  try {
    for (;;) {
      // Read after noting whether the witness was gone: its record is written before it goes.
      const gone = link.closed;
      const recorded = await readRecordedResult(options.dir, options.ownerUid ?? 0);
      if (recorded.state !== "absent") return recorded;
      if (gone) return { state: "gone" };
      link.tryConnect();
      const left = until - now();
      if (left <= 0) return { state: "timeout" };
      await sleep(Math.min(pollMs, left));
    }
  } finally {
    link.dispose();
  }
}

/** A connection to the witness's socket; `closed` once it was open and then closed. */
class WitnessLink {
  private socket: Socket | undefined;
  private opened = false;
  closed = false;

  constructor(private readonly path: string) {}

  tryConnect(): void {
    if (this.socket !== undefined) return;
    const socket = connect(this.path);
    this.socket = socket;
    socket.on("connect", () => {
      this.opened = true;
    });
    socket.on("data", () => undefined);
    socket.on("error", () => undefined);
    socket.on("close", () => {
      if (this.opened) this.closed = true;
      // Not there yet (the agent container is starting): try again on the next poll.
      else this.socket = undefined;
    });
  }

  dispose(): void {
    this.socket?.destroy();
  }
}
