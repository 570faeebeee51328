/**
 * The I/O a sink needs, behind small function types so tests can inject them. The defaults
 * are undici for HTTP and node:fs for file sinks.
 */
import { appendFile } from "node:fs/promises";
import { timedPost } from "../http-post.js";
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
  // The response body is ignored; timedPost drains it so the connection is reused.
  const { status } = await timedPost({ url, headers, body, timeoutMs });
  return { status };
};

export const fsAppend: AppendFile = (path, data) => appendFile(path, data, { encoding: "utf8" });

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One JSON object per line on stderr, the controller's log format. */
export const jsonLogger: SinkLogger = jsonLineLogger("sinks");
