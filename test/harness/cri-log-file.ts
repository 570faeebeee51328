/**
 * Writes a log too large for a ConfigMap (tens of MiB) as a CRI log file, the format a container
 * runtime writes and kwok serves, for a pod script's `logFiles` (pod-script.ts). Streamed: the
 * lines come from an iterable and are written in batches, so a 64 MiB log never sits in memory.
 * A line longer than 16 KiB is split into partial (`P`) entries ending with a full (`F`) one, as
 * containerd does: a reader of `pods/log` gets the line back whole.
 */

import { once } from "node:events";
import { createWriteStream } from "node:fs";

/** containerd's default max_container_log_line_size: longer lines are written in parts. */
export const CRI_LINE_PART_BYTES = 16 * 1024;
/** How much is gathered before one write. */
const BATCH_CHARS = 1024 * 1024;

/** `<RFC3339Nano>` as the runtime stamps each entry. */
function criStamp(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}

/**
 * Writes `lines` (each without its "\n") to `path` as CRI log entries stamped `at`; resolves with
 * the bytes of log text written (what `pods/log` serves: the lines and their newlines).
 */
export async function writeCriLogFile(path: string, lines: Iterable<string>, at: Date): Promise<number> {
  const out = createWriteStream(path);
  const stamp = criStamp(at);
  let batch: string[] = [];
  let batchChars = 0;
  let served = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    if (!out.write(batch.join(""))) await once(out, "drain");
    batch = [];
    batchChars = 0;
  };
  for (const line of lines) {
    served += Buffer.byteLength(line) + 1;
    for (let at = 0; ; at += CRI_LINE_PART_BYTES) {
      const part = line.slice(at, at + CRI_LINE_PART_BYTES);
      const last = at + CRI_LINE_PART_BYTES >= line.length;
      const entry = `${stamp} stdout ${last ? "F" : "P"} ${part}\n`;
      batch.push(entry);
      batchChars += entry.length;
      if (last) break;
    }
    if (batchChars >= BATCH_CHARS) await flush();
  }
  await flush();
  out.end();
  await once(out, "finish");
  return served;
}
