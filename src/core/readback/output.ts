/**
 * What the controller reads back from a finished run: the capped output, the session id and the
 * pull request URL (docs/run-pod.md#what-the-controller-reads-back).
 */

import type { Vendor } from "../cli/routing.js";
import { AGENT_STDERR_PREFIX, meterText } from "./log-meter.js";

/** Default MAX_OUTPUT_BYTES (256 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 262144;

/**
 * Caps `text` at `maxBytes` UTF-8 bytes, keeping its end. When cut, the result is the marker
 * `...[truncated <n> bytes]...\n` followed by the kept tail, which starts at a UTF-8 lead byte
 * (no character is split); n counts the bytes dropped, and marker plus tail fit in `maxBytes`, so
 * status.output never exceeds MAX_OUTPUT_BYTES. A cap too small for the marker keeps the bare tail.
 */
export function capOutput(text: string, maxBytes: number, droppedBefore = 0): string {
  const bytes = Buffer.from(text, "utf8");
  const max = Math.max(0, maxBytes);
  if (bytes.length <= max && droppedBefore === 0) return text;
  // Sized for the largest n possible (every byte dropped), so the real marker is never longer.
  const markerRoom = Buffer.byteLength(truncationMarker(droppedBefore + bytes.length));
  const withMarker = markerRoom < max;
  let start = Math.max(0, bytes.length - (withMarker ? max - markerRoom : max));
  // 0b10xxxxxx is a continuation byte; move forward to the next lead byte.
  while (start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  const tail = bytes.subarray(start).toString("utf8");
  return withMarker ? `${truncationMarker(droppedBefore + start)}${tail}` : tail;
}

const truncationMarker = (dropped: number) => `...[truncated ${dropped} bytes]...\n`;

/** A whole log's facts, through the one meter every read-back uses. */
const factsOf = (vendor: Vendor, log: string) => meterText(log, { vendor, keepBytes: 0 }).facts;

/** The last session id in an uncapped pod log; "" for vendors that announce none. */
export function lastSessionId(vendor: Vendor, log: string): string {
  return factsOf(vendor, log).sessionId;
}

export { AGENT_STDERR_PREFIX };

/**
 * Why the CLI failed, in its own words, from an uncapped pod log: the last error it reported on
 * one of its output lines (VendorAdapter.errorMessage); failing that, the last line it wrote to
 * stderr, since a CLI that cannot start at all (no key, an untrusted folder, a rejected flag)
 * says why only there; failing that, the supervisor's last error diagnostic (why the CLI could not
 * be installed or set up). Flattened to one line, cut to 512 characters; "" when it said nothing.
 */
export function lastCliError(vendor: Vendor, log: string): string {
  return factsOf(vendor, log).cliError;
}

/** The url of the last delivery event carrying one in the courier log (docs/events.md#delivery-events); else "". */
export function lastPullRequestUrl(courierLog: string): string {
  return factsOf("exec", courierLog).pullRequestUrl;
}
