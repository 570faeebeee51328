/**
 * The validating admission webhook's HTTPS server: POST /validate takes an AdmissionReview and
 * answers allowed, with warnings. It never denies: a failure here (bad body, lookup error, crash
 * in a check) still answers allowed, and the webhook is registered with failurePolicy Ignore so
 * a controller that is down never blocks a write (docs/admission.md).
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { type AdmissionChecks, reviewWarnings } from "./lookups.js";
import { allowedReview, parseReview, ReviewError } from "./review.js";
import { readTlsPair, reloadTlsOnChange, type TlsFiles } from "./tls.js";

export const ADMISSION_PATH = "/validate";
/** An AdmissionReview carries the object and the old object; etcd caps each at ~1.5 MiB. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface AdmissionServerOptions extends AdmissionChecks {
  port: number;
  host: string;
  tls: TlsFiles;
  /** How often the certificate files are re-read (default 60 s). */
  tlsReloadMs?: number;
  log?: (msg: string) => void;
}

export interface AdmissionServer {
  port: number;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge(`body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res
    .writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" })
    .end(text);
}

export function admissionHandler(o: AdmissionChecks & { log: (msg: string) => void }) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== ADMISSION_PATH)
      return reply(res, 404, `no such path: ${path}; the webhook serves ${ADMISSION_PATH}\n`);
    if (req.method !== "POST") return reply(res, 405, `${ADMISSION_PATH} accepts POST only\n`);
    let request: ReturnType<typeof parseReview>;
    try {
      request = parseReview(JSON.parse(await readBody(req)));
    } catch (err) {
      const status = err instanceof BodyTooLarge ? 413 : 400;
      const why =
        err instanceof ReviewError || err instanceof BodyTooLarge
          ? err.message
          : `invalid JSON: ${(err as Error).message}`;
      return reply(res, status, `not an AdmissionReview: ${why}\n`);
    }
    let warnings: string[] = [];
    try {
      warnings = await reviewWarnings(request, o);
    } catch (err) {
      // A bug in a check must not turn into a failed call; the write goes through unwarned.
      o.log(
        `admission webhook: checks failed for request ${request.uid}: ${String((err as Error)?.stack ?? err)}`,
      );
    }
    reply(res, 200, allowedReview(request.uid, warnings));
  };
}

export async function startAdmissionServer(o: AdmissionServerOptions): Promise<AdmissionServer> {
  const log = o.log ?? ((m: string) => console.log(JSON.stringify({ level: "info", msg: m })));
  const pair = await readTlsPair(o.tls);
  const handle = admissionHandler({ ...o, log });
  const server: Server = createServer({ ...pair }, (req, res) => {
    handle(req, res).catch((err) => {
      log(`admission webhook: request failed: ${String(err)}`);
      if (!res.headersSent) reply(res, 500, "internal error\n");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const stopReload = reloadTlsOnChange(server, o.tls, pair, o.tlsReloadMs ?? 60_000, log);
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      stopReload();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
