/**
 * What the controller reads back from a finished run: the capped output, the session id and the
 * pull request URL (docs/run-pod.md#what-the-controller-reads-back).
 */
import type { Vendor } from "./routing.js";
import { announcedSessionId, cliErrorMessage, parseJsonLine } from "./vendors.js";

/** Default MAX_OUTPUT_BYTES (256 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 262144;

/**
 * Caps `text` at `maxBytes` UTF-8 bytes, keeping its end. When cut, the result is the marker
 * `...[truncated <n> bytes]...\n` followed by the kept tail, which starts at a UTF-8 lead byte
 * (no character is split); n counts the bytes dropped, and marker plus tail fit in `maxBytes`, so
 * status.output never exceeds MAX_OUTPUT_BYTES. A cap too small for the marker keeps the bare tail.
 */
export function capOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  const max = Math.max(0, maxBytes);
  if (bytes.length <= max) return text;
  // Sized for the largest n possible (every byte dropped), so the real marker is never longer.
  const markerRoom = Buffer.byteLength(truncationMarker(bytes.length));
  const withMarker = markerRoom < max;
  let start = bytes.length - (withMarker ? max - markerRoom : max);
  // 0b10xxxxxx is a continuation byte; move forward to the next lead byte.
  while (start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  const tail = bytes.subarray(start).toString("utf8");
  return withMarker ? `${truncationMarker(start)}${tail}` : tail;
}

const truncationMarker = (dropped: number) => `...[truncated ${dropped} bytes]...\n`;

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

/** How the supervisor marks a line the CLI wrote to stderr in the agent container's log. */
export const AGENT_STDERR_PREFIX = "[agent] ";

/**
 * Why the CLI failed, in its own words, from an uncapped pod log: the last error it reported on
 * one of its output lines (VendorAdapter.errorMessage); failing that, the last line it wrote to
 * stderr, since a CLI that cannot start at all (no key, an untrusted folder, a rejected flag)
 * says why only there. Flattened to one line, cut to 512 characters; "" when it said nothing.
 */
export function lastCliError(vendor: Vendor, log: string): string {
  let reported = "";
  let stderr = "";
  let supervisor = "";
  for (const line of log.split("\n")) {
    const message = cliErrorMessage(vendor, line);
    if (message !== undefined && message.trim() !== "") reported = message;
    else if (line.startsWith(AGENT_STDERR_PREFIX) && line.length > AGENT_STDERR_PREFIX.length)
      stderr = line.slice(AGENT_STDERR_PREFIX.length);
    else {
      const diagnostic = supervisorError(line);
      if (diagnostic) supervisor = diagnostic;
    }
  }
  const flat = (reported || stderr || supervisor).replace(/\s+/g, " ").trim();
  return flat.length > 512 ? `${flat.slice(0, 511)}…` : flat;
}

/**
 * The message of the supervisor's own error diagnostic on this line (src/run-pod/common/log.ts
 * shape), e.g. why the CLI could not be installed or set up, or was not found: the CLI never ran,
 * so nothing else in the log says why.
 */
function supervisorError(line: string): string | undefined {
  const parsed = parseJsonLine(line);
  return parsed?.component === "supervisor" && parsed.level === "error" && typeof parsed.msg === "string"
    ? parsed.msg
    : undefined;
}

/** The url of the last delivery event carrying one in the courier log (docs/events.md#delivery-events); else "". */
export function lastPullRequestUrl(courierLog: string): string {
  let found = "";
  for (const line of courierLog.split("\n")) {
    const event = parseJsonLine(line);
    if (event?.kind === "delivery" && typeof event.url === "string" && event.url !== "") found = event.url;
  }
  return found;
}
