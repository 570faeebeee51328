/**
 * The header block a sink's `headers_secret` names (docs/events.md#sinks): one `Name: value` per line,
 * blank lines ignored, split at the first colon, both sides trimmed.
 */

/** Parsed headers in block order. Lines without a colon or with an empty name are skipped. */
export function parseHeaderBlock(block: string | undefined): Array<[string, string]> {
  if (block === undefined) return [];
  const headers: Array<[string, string]> = [];
  for (const raw of block.split(/\r?\n/)) {
    if (raw.trim() === "") continue;
    const colon = raw.indexOf(":");
    if (colon < 0) continue;
    const name = raw.slice(0, colon).trim();
    const value = raw.slice(colon + 1).trim();
    if (name === "") continue;
    headers.push([name, value]);
  }
  return headers;
}
