/**
 * The session's prompt queue and its rules (docs/supervisor.md#realtime-sessions): FIFO, at most
 * 16 waiting prompts (the running turn excluded), turns numbered from 1 across the session, and a
 * close that refuses new prompts and a second close but lets the queued turns run.
 *
 * Pure state: the HTTP layer asks it, the turn loop takes from it.
 */
export const MAX_PROMPT_BYTES = 102400;
export const MAX_WAITING = 16;

export const MSG_TOO_LARGE = `prompt exceeds ${MAX_PROMPT_BYTES} bytes`;
export const MSG_QUEUE_FULL = "too many queued prompts";
export const MSG_ENDING = "the session is ending";

export interface QueuedTurn {
  turn: number;
  prompt: string;
}

export type Admission =
  | { ok: true; turn: number; queued: number }
  | { ok: false; status: 409 | 413 | 429; error: string };

export class PromptQueue {
  private readonly waiting: QueuedTurn[] = [];
  private nextTurn = 1;
  private closingFlag = false;

  get closing(): boolean {
    return this.closingFlag;
  }

  get length(): number {
    return this.waiting.length;
  }

  /** Queues a prompt; `queued` counts the waiting prompts including this one. */
  offer(prompt: string): Admission {
    if (Buffer.byteLength(prompt, "utf8") > MAX_PROMPT_BYTES)
      return { ok: false, status: 413, error: MSG_TOO_LARGE };
    if (this.closingFlag) return { ok: false, status: 409, error: MSG_ENDING };
    if (this.waiting.length >= MAX_WAITING) return { ok: false, status: 429, error: MSG_QUEUE_FULL };
    const turn = this.nextTurn++;
    this.waiting.push({ turn, prompt });
    return { ok: true, turn, queued: this.waiting.length };
  }

  /** The session's own first turn (the definition's prompt); never refused. */
  initial(prompt: string): void {
    this.waiting.push({ turn: this.nextTurn++, prompt });
  }

  /** Stops new prompts; a second close is refused. `queued` is what still runs. */
  close(): { ok: true; queued: number } | { ok: false; status: 409; error: string } {
    if (this.closingFlag) return { ok: false, status: 409, error: MSG_ENDING };
    this.closingFlag = true;
    return { ok: true, queued: this.waiting.length };
  }

  take(): QueuedTurn | undefined {
    return this.waiting.shift();
  }

  /**
   * The session stops taking turns (a signal or the deadline): new prompts and closes are refused
   * as after a close, and the waiting turns, which will never run, are handed back to be reported.
   */
  end(): QueuedTurn[] {
    this.closingFlag = true;
    return this.waiting.splice(0);
  }
}
