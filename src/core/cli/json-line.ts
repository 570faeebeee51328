/**
 * The shape every CLI line reader works on: one parsed NDJSON line, and what a terminal line says.
 * Its own module so the per-vendor readers (opencode-lines.ts) and the vendor table (vendors.ts)
 * that uses them both name it without importing each other.
 */

/** A parsed NDJSON line: a JSON object. */
export type JsonLine = Readonly<Record<string, unknown>>;

/** What a terminal line says about the run it ends. */
export interface TerminalVerdict {
  success: boolean;
}
