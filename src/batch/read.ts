/**
 * Shape checks for provider bodies. A body the controller cannot read is a poll error (retried
 * later), never a run outcome, so every check throws BatchProviderError naming what is wrong.
 */
import { isRecord } from "./http.js";
import { BatchProviderError } from "./provider.js";

export function unreadable(vendor: string, what: string): BatchProviderError {
  return new BatchProviderError(`${vendor}: unreadable response: ${what}`);
}

export function record(vendor: string, v: unknown, what: string): Record<string, unknown> {
  if (!isRecord(v)) throw unreadable(vendor, `${what} is not an object`);
  return v;
}

export function str(vendor: string, v: unknown, what: string): string {
  if (typeof v !== "string") throw unreadable(vendor, `${what} is not a string`);
  return v;
}

export function optStr(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** A token count: missing or non-numeric fields count as 0, as every CLI treats them. */
export function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/** Parses JSONL text; a line that is not JSON makes the whole file unreadable. */
export function jsonl(vendor: string, text: string, what: string): unknown[] {
  const out: unknown[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      throw unreadable(vendor, `${what} line ${i + 1} is not JSON`);
    }
  }
  return out;
}

export { isRecord as isRecordLike } from "./http.js";
