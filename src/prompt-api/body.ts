/**
 * Reads a request body up to a byte limit, refusing as soon as the limit is passed instead of
 * buffering whatever a caller sends. A declared Content-Length over the limit is refused before
 * reading anything.
 */

export type BodyRead = { ok: true; bytes: Uint8Array } | { ok: false; reason: "too-large" };

export async function readLimitedBody(
  body: ReadableStream<Uint8Array> | null,
  contentLength: string | undefined | null,
  limit: number,
): Promise<BodyRead> {
  if (contentLength !== undefined && contentLength !== null && /^[0-9]+$/.test(contentLength.trim())) {
    if (Number(contentLength.trim()) > limit) {
      await body?.cancel().catch(() => undefined);
      return { ok: false, reason: "too-large" };
    }
  }
  if (!body) return { ok: true, bytes: new Uint8Array(0) };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, reason: "too-large" };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return { ok: true, bytes };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The prompt of a `{"prompt": "<text>"}` body, or undefined when the body is not that. */
export function promptFromBody(bytes: Uint8Array): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const prompt = (value as Record<string, unknown>).prompt;
  return typeof prompt === "string" && prompt.length > 0 ? prompt : undefined;
}
