/**
 * One outbound POST over undici with a single time budget, shared by the prompt API's relay to the
 * run pod, the sinks' HTTP delivery and the supervisor's conversation save. The budget bounds the
 * wait for the headers, every gap in the response body and the whole exchange, so a peer that
 * accepts the connection and then stalls cannot hold the caller past it. What the status means is
 * the caller's business.
 */
import type { Readable } from "node:stream";
import { type Dispatcher, request } from "undici";

export interface TimedPostRequest {
  url: string;
  headers: Record<string, string>;
  /** A string, or a stream that is sent as it is read (never held whole in memory). */
  body: string | Readable;
  timeoutMs: number;
  /**
   * Read the response body up to this many bytes and return it as text; past the limit the
   * response is abandoned and what was read so far is returned (a cut body is not valid JSON).
   * Without it the body is drained unread, so the connection can be reused.
   */
  readBodyUpTo?: number;
  /** The dispatcher to send with (the run pod's, through its egress proxy); default undici's global one. */
  dispatcher?: Dispatcher;
}

export interface TimedPostResponse {
  status: number;
  /** The body as text when `readBodyUpTo` was given, otherwise "". */
  body: string;
}

/** Resolves with the answer whatever its status; rejects on a connection error or timeout. */
export async function timedPost(req: TimedPostRequest): Promise<TimedPostResponse> {
  const { url, headers, body, timeoutMs, readBodyUpTo, dispatcher } = req;
  const res = await request(url, {
    method: "POST",
    headers,
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
    ...(dispatcher ? { dispatcher } : {}),
  });
  if (readBodyUpTo === undefined) {
    await res.body.dump();
    return { status: res.statusCode, body: "" };
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    total += buf.byteLength;
    if (total > readBodyUpTo) {
      res.body.destroy();
      break;
    }
    chunks.push(buf);
  }
  return { status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") };
}
