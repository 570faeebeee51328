/**
 * An incremental server-sent-events reader (the WHATWG event-stream format): bytes in, in any
 * chunking, events out. Lines end in CRLF, LF or CR, a CR at a chunk's end may meet its LF in the
 * next chunk, and a UTF-8 character may be split across chunks. Pure.
 *
 * The gateway only reads the stream it has already forwarded, so an event larger than `maxEventChars`
 * is dropped (and counted) instead of growing without bound.
 */

export interface SseEvent {
  /** The `event:` field; undefined when the event has none (Gemini's chunks). */
  event?: string;
  /** The `data:` lines joined with "\n". */
  data: string;
}

export const DEFAULT_MAX_EVENT_CHARS = 32 * 1024 * 1024;

export class SseReader {
  private readonly decoder = new TextDecoder("utf-8");
  private pending = "";
  private eventName: string | undefined;
  private data: string[] = [];
  private dataChars = 0;
  private overflowing = false;
  private lastWasCr = false;
  /** Events dropped for being larger than the bound. */
  dropped = 0;

  constructor(private readonly maxEventChars = DEFAULT_MAX_EVENT_CHARS) {}

  push(chunk: Uint8Array): SseEvent[] {
    return this.lines(this.decoder.decode(chunk, { stream: true }));
  }

  /** The end of the stream: a last event without its blank line is not dispatched (the format's rule). */
  end(): SseEvent[] {
    const out = this.lines(this.decoder.decode());
    this.pending = "";
    return out;
  }

  private lines(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    let i = 0;
    if (this.lastWasCr && text.startsWith("\n")) {
      start = 1;
      i = 1;
    }
    this.lastWasCr = false;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.pending + text.slice(start, i);
      this.pending = "";
      this.line(line, out);
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.lastWasCr = true;
        }
      }
      start = i + 1;
    }
    const rest = text.slice(start);
    if (this.pending.length + rest.length > this.maxEventChars) {
      // One line beyond the bound: drop it and the event it belongs to.
      this.overflowing = true;
      this.pending = "";
    } else {
      this.pending += rest;
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.overflowing) this.dropped++;
      else if (this.data.length > 0) out.push({ event: this.eventName, data: this.data.join("\n") });
      this.eventName = undefined;
      this.data = [];
      this.dataChars = 0;
      this.overflowing = false;
      return;
    }
    if (line.startsWith(":") || this.overflowing) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.eventName = value;
    else if (field === "data") {
      this.dataChars += value.length;
      if (this.dataChars > this.maxEventChars) {
        this.overflowing = true;
        this.data = [];
      } else this.data.push(value);
    }
  }
}
