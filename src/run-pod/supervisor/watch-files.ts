/**
 * `output.watch` file events (docs/events.md#file-events): after the agent exits, each declared file is read
 * once and reported, in declaration order, before the terminal lifecycle event. A path outside
 * the workspace raises nothing (logged only); a declared file inside it always reports, with a
 * `reason` when there is no content.
 */
import { isUtf8 } from "node:buffer";
import { constants } from "node:fs";
import { type FileHandle, open, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import type { WatchedFile } from "../../core/types.js";
import type { JsonLineLogger } from "../../log.js";

/** 128 KiB: larger files report `reason: "too-large"`. */
export const MAX_WATCHED_FILE_BYTES = 131072;

export type FileReason = "missing" | "too-large" | "unreadable";

/** Key order is the wire order of docs/events.md#file-events. */
export interface FileEvent {
  kind: "file";
  event: string;
  path: string;
  content?: string;
  reason?: FileReason;
  encoding?: "base64";
}

/**
 * The absolute, normalised path a watch entry names, or undefined when it is not strictly inside
 * the workspace (the workspace root itself is refused). Lexical, like the spec's rule.
 */
export function resolveWatchedPath(workspaceDir: string, path: string): string | undefined {
  const root = resolve(workspaceDir);
  const absolute = isAbsolute(path) ? resolve(path) : resolve(root, path);
  const rel = relative(root, absolute);
  if (rel === "" || rel === ".." || rel.startsWith("../") || isAbsolute(rel)) return undefined;
  return absolute;
}

type Content = Pick<FileEvent, "content" | "reason" | "encoding">;

/** One file's content, or why there is none. Never throws. */
export async function readWatchedFile(path: string): Promise<Content> {
  try {
    if (!(await stat(path)).isFile()) return { reason: "missing" };
  } catch (err) {
    return { reason: reasonFor(err) };
  }
  let handle: FileHandle | undefined;
  try {
    // O_NONBLOCK: a FIFO swapped in after the stat must not hang the run.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const info = await handle.stat();
    if (!info.isFile()) return { reason: "missing" };
    if (info.size > MAX_WATCHED_FILE_BYTES) return { reason: "too-large" };
    const bytes = await readAtMost(handle, MAX_WATCHED_FILE_BYTES + 1);
    if (bytes.length > MAX_WATCHED_FILE_BYTES) return { reason: "too-large" };
    // docs/decisions.md D-62: bytes that are not UTF-8 travel as base64.
    return isUtf8(bytes)
      ? { content: bytes.toString("utf8") }
      : { content: bytes.toString("base64"), encoding: "base64" };
  } catch (err) {
    return { reason: reasonFor(err) };
  } finally {
    await handle?.close().catch(() => {});
  }
}

/** The file events for the declared entries, in order; refused paths are logged and skipped. */
export async function watchedFileEvents(
  entries: readonly WatchedFile[],
  workspaceDir: string,
  log: JsonLineLogger,
): Promise<FileEvent[]> {
  const events: FileEvent[] = [];
  for (const entry of entries) {
    const path = resolveWatchedPath(workspaceDir, entry.path);
    if (path === undefined) {
      log.warn(`output.watch path is not inside ${workspaceDir}; no file event raised`, {
        event: entry.event,
        path: entry.path,
      });
      continue;
    }
    events.push({ kind: "file", event: entry.event, path, ...(await readWatchedFile(path)) });
  }
  return events;
}

async function readAtMost(handle: FileHandle, limit: number): Promise<Buffer> {
  const buf = Buffer.alloc(limit);
  let filled = 0;
  while (filled < limit) {
    const { bytesRead } = await handle.read(buf, filled, limit - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buf.subarray(0, filled);
}

function reasonFor(err: unknown): FileReason {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" ? "missing" : "unreadable";
}
