/**
 * What the controller reads back from a finished run: the capped output, the session id and the
 * pull request URL (runtime.md §12, agent-crd.txt).
 */
import type { Vendor } from "./routing.js";
import { announcedSessionId, parseJsonLine } from "./vendors.js";

/** Default MAX_OUTPUT_BYTES (256 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 262144;

/**
 * Keeps the last `maxBytes` bytes of `text`. When cut, the kept part starts at the next UTF-8
 * lead byte (so no character is split) and is prefixed `...[truncated <n> bytes]...\n`, where n
 * counts the bytes dropped. The marker is extra to the kept tail, as upstream did.
 */
export function capOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let start = bytes.length - Math.max(0, maxBytes);
  // 0b10xxxxxx is a continuation byte; move forward to the next lead byte.
  while (start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  return `...[truncated ${start} bytes]...\n${bytes.subarray(start).toString("utf8")}`;
}

/** The last session id in an uncapped pod log; "" for vendors that announce none. */
export function lastSessionId(vendor: Vendor, log: string): string {
  let found = "";
  for (const line of log.split("\n")) {
    const event = parseJsonLine(line);
    if (!event) continue;
    const id = announcedSessionId(vendor, event);
    if (id !== undefined) found = id;
  }
  return found;
}

/** The url of the last delivery event carrying one in the courier log (events.md §10); else "". */
export function lastPullRequestUrl(courierLog: string): string {
  let found = "";
  for (const line of courierLog.split("\n")) {
    const event = parseJsonLine(line);
    if (event?.kind === "delivery" && typeof event.url === "string" && event.url !== "") found = event.url;
  }
  return found;
}
