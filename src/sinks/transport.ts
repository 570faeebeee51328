/**
 * The I/O a sink needs, behind small function types so tests can inject them. The defaults
 * are undici for HTTP and node:fs for file sinks.
 */
import { appendFile } from "node:fs/promises";
import { request } from "undici";
import { type JsonLineLogger, jsonLineLogger } from "../log.js";

export interface HttpPostRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Per-attempt timeout (docs/decisions.md D-34: 10 s). */
  timeoutMs: number;
}

/** Resolves with the response status; rejects on a transport error or timeout. */
export type HttpPost = (req: HttpPostRequest) => Promise<{ status: number }>;

export type AppendFile = (path: string, data: string) => Promise<void>;

export type Sleep = (ms: number) => Promise<void>;

export type SinkLogger = JsonLineLogger;

export const undiciPost: HttpPost = async ({ url, headers, body, timeoutMs }) => {
  const res = await request(url, {
    method: "POST",
    headers,
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  // The response body is ignored, but must be consumed so the connection is reused.
  await res.body.dump();
  return { status: res.statusCode };
};

export const fsAppend: AppendFile = (path, data) => appendFile(path, data, { encoding: "utf8" });

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One JSON object per line on stderr, the controller's log format. */
export const jsonLogger: SinkLogger = jsonLineLogger("sinks");
