/**
 * Splits a child's output stream into lines (docs/supervisor.md#start-settings-and-signals): on `\n`, empty lines skipped,
 * a final line without `\n` still counts. A line longer than the limit stops the splitting for
 * good (upstream's scanner stopped reading there); the caller keeps draining the pipe so the
 * agent never blocks on a full pipe, and the run still ends when the process exits.
 */

/** 16 MiB: the longest line forwarded. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

const NEWLINE = 0x0a;

export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private stopped = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onOverflow: (maxBytes: number) => void = () => {},
    private readonly maxBytes = MAX_LINE_BYTES,
  ) {}

  /** True once a line exceeded the limit; everything after it is discarded. */
  get overflowed(): boolean {
    return this.stopped;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.stopped && start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl < 0 ? chunk.length : nl;
      if (this.pendingBytes + (end - start) > this.maxBytes) {
        this.overflow();
        return;
      }
      if (nl < 0) {
        this.pending.push(chunk.subarray(start));
        this.pendingBytes += chunk.length - start;
        return;
      }
      this.emit(chunk.subarray(start, nl));
      start = nl + 1;
    }
  }

  /** End of stream: a last line without `\n` is still a line. */
  end(): void {
    if (!this.stopped) this.emit(Buffer.alloc(0));
  }

  private emit(tail: Buffer): void {
    const bytes = this.pending.length === 0 ? tail : Buffer.concat([...this.pending, tail]);
    this.pending = [];
    this.pendingBytes = 0;
    if (bytes.length > 0) this.onLine(bytes.toString("utf8"));
  }

  private overflow(): void {
    this.stopped = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.onOverflow(this.maxBytes);
  }
}
