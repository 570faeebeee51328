/**
 * The serving certificate, read from files (the cert-manager Secret mounted as a volume) and
 * re-read while serving: cert-manager renews the Secret, the kubelet swaps the mounted files, and
 * the next TLS handshake uses the new pair without a restart.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Server } from "node:https";

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

export async function readTlsPair(files: TlsFiles): Promise<TlsPair> {
  const read = async (what: string, path: string) => {
    try {
      return await readFile(path);
    } catch (err) {
      throw new Error(`admission webhook: cannot read the TLS ${what} ${path}: ${(err as Error).message}`);
    }
  };
  return { cert: await read("certificate", files.certFile), key: await read("key", files.keyFile) };
}

const fingerprint = (p: TlsPair): string => createHash("sha256").update(p.cert).update(p.key).digest("hex");

/**
 * Polls the files and swaps the server's secure context when they change. A half-written or
 * mismatched pair (read between the kubelet's two file swaps) is skipped and tried again on the
 * next tick, so the server keeps the last good pair. Returns a stop function.
 */
export function reloadTlsOnChange(
  server: Server,
  files: TlsFiles,
  initial: TlsPair,
  intervalMs: number,
  log: (msg: string) => void,
): () => void {
  let current = fingerprint(initial);
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const next = await readTlsPair(files);
      const print = fingerprint(next);
      if (print === current) return;
      server.setSecureContext(next);
      current = print;
      log("admission webhook: serving certificate reloaded");
    } catch (err) {
      log(`admission webhook: keeping the current certificate: ${(err as Error).message}`);
    } finally {
      busy = false;
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
