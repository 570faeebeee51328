/**
 * Reads a client's request body up to the gateway's bound, refusing as soon as it is passed (a
 * declared Content-Length over the bound before reading anything), so a run cannot make the
 * gateway buffer more than the bound per request.
 */
import type { IncomingMessage } from "node:http";

export type BodyRead = { ok: true; bytes: Buffer } | { ok: false; reason: "too-large" | "aborted" };

export function readBoundedBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && /^[0-9]+$/.test(declared) && Number(declared) > limit) {
    return Promise.resolve({ ok: false, reason: "too-large" });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const settle = (result: BodyRead) => {
      if (settled) return;
      settled = true;
      req.off("data", onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > limit) {
        settle({ ok: false, reason: "too-large" });
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => settle({ ok: true, bytes: Buffer.concat(chunks, total) }));
    req.once("error", () => settle({ ok: false, reason: "aborted" }));
    req.once("close", () => {
      if (!req.complete) settle({ ok: false, reason: "aborted" });
    });
  });
}
