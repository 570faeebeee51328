/**
 * JSON Pointer (ajv's instancePath) to the dotted path users know from kubectl
 * (`spec.files[0].url`). Whether a segment is a list index is read from the data itself, so a
 * map key that happens to be numeric stays a key.
 */

export function pointerSegments(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

const plainKey = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

export function displayPath(segments: readonly string[], data: unknown): string {
  let out = "";
  let node: unknown = data;
  for (const segment of segments) {
    if (Array.isArray(node)) {
      out += `[${segment}]`;
      node = node[Number(segment)];
      continue;
    }
    out += plainKey.test(segment) ? (out ? `.${segment}` : segment) : `[${JSON.stringify(segment)}]`;
    node = node !== null && typeof node === "object" ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return out;
}

export function valueAt(segments: readonly string[], data: unknown): unknown {
  let node: unknown = data;
  for (const segment of segments) {
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[Number(segment)] : (node as Record<string, unknown>)[segment];
  }
  return node;
}
