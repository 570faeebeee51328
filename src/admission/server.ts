/**
 * The validating admission webhook's HTTPS server: POST /validate takes an AdmissionReview and
 * answers allowed, with warnings. It never denies: a failure here (bad body, lookup error, crash
 * in a check) still answers allowed, and the webhook is registered with failurePolicy Ignore so
 * a controller that is down never blocks a write (docs/admission.md).
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { answerClientErrors, type RequestTimeouts, timeoutServerOptions } from "../http-server-limits.js";
import { ReviewGate } from "./gate.js";
import { exceedsJsonBounds, type JsonBounds } from "./json-bounds.js";
import { type AdmissionChecks, lookupLimits, reviewWarnings } from "./lookups.js";
import { allowedReview, parseReview, ReviewError } from "./review.js";
import { readTlsPair, reloadTlsOnChange, type TlsFiles } from "./tls.js";

export const ADMISSION_PATH = "/validate";
/**
 * The largest review worth reading. An UPDATE's review carries the object and the old object, and
 * etcd refuses a stored object over 1.5 MiB (its default request limit), so 2 × 1.5 MiB plus room
 * for the envelope covers every review whose write can succeed. A larger one is answered 413:
 * with failurePolicy Ignore the API server goes on without warnings, and etcd refuses the write.
 */
export const MAX_BODY_BYTES = 3 * 1024 * 1024 + 64 * 1024;
/**
 * Reviews read and checked at once, and waiting for a turn. A review's parsed object can take ten
 * times its bytes (a 3 MiB array of empty objects is ~40 MiB of heap), so two at a time keep the
 * webhook's share of the controller's 512 MiB bounded; the API server's own calls are small and
 * take milliseconds, so a short queue rarely holds one. Past the queue: 429, warnings skipped.
 */
const MAX_ACTIVE_REVIEWS = 2;
/** Waiting ends with a 429 after REVIEW_DEADLINE_MS: the API server has given up by then. */
const MAX_WAITING_REVIEWS = 32;
/**
 * The API server gives up after the webhook's timeoutSeconds (5) and a request that has not
 * arrived by then is useless; a slow client is cut off instead of holding a socket and a buffer.
 */
export const WEBHOOK_TIMEOUTS: RequestTimeouts = { headersMs: 5_000, requestMs: 10_000, keepAliveMs: 30_000 };
/** TLS handshakes that do not finish in this time are dropped (Node's default is 120 s). */
const HANDSHAKE_TIMEOUT_MS = 5_000;
/** Open connections at most (the API server reuses a few; anything past this is refused). */
const MAX_CONNECTIONS = 256;
/**
 * The answer is sent by then whatever the checks are doing (their lookups share a 3 s budget),
 * inside the webhook's timeoutSeconds (5).
 */
const REVIEW_DEADLINE_MS = 4_000;
/**
 * JSON.parse and the checks run on the event loop the controller reconciles on, so a review's
 * shape is bounded before parsing: the API server's objects nest about 20 levels (managedFields
 * included) and hold a few thousand values, a million-value body parses for seconds.
 */
export const REVIEW_JSON_BOUNDS: JsonBounds = { maxDepth: 100, maxValues: 100_000 };

export interface AdmissionServerOptions extends AdmissionChecks {
  port: number;
  host: string;
  tls: TlsFiles;
  /** How often the certificate files are re-read (default 60 s). */
  tlsReloadMs?: number;
  /** Default WEBHOOK_TIMEOUTS; tests shorten them. */
  timeouts?: RequestTimeouts;
  log?: (msg: string) => void;
}

export interface AdmissionServer {
  port: number;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new BodyTooLarge(`body exceeds ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge(`body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  const tooComplex = exceedsJsonBounds(body, REVIEW_JSON_BOUNDS);
  if (tooComplex) throw new BodyTooLarge(`the body is too complex to check: ${tooComplex}`);
  return body.toString("utf8");
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res
    .writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" })
    .end(text);
}

export function admissionHandler(options: AdmissionChecks & { log: (msg: string) => void }) {
  const gate = new ReviewGate(MAX_ACTIVE_REVIEWS, MAX_WAITING_REVIEWS);
  // One lookup budget for the whole process, not one per review.
  const o = { ...options, limits: options.limits ?? lookupLimits() };
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== ADMISSION_PATH)
      return reply(res, 404, `no such path: ${path}; the webhook serves ${ADMISSION_PATH}\n`);
    if (req.method !== "POST") return reply(res, 405, `${ADMISSION_PATH} accepts POST only\n`);
    const release = await gate.enter(REVIEW_DEADLINE_MS);
    if (!release) return reply(res, 429, "too many admission reviews at once; try again\n");
    try {
      await review(req, res, o);
    } finally {
      release();
    }
  };
}

async function review(
  req: IncomingMessage,
  res: ServerResponse,
  o: AdmissionChecks & { log: (msg: string) => void },
): Promise<void> {
  let request: ReturnType<typeof parseReview>;
  try {
    request = parseReview(JSON.parse(await readBody(req)));
  } catch (err) {
    const status = err instanceof BodyTooLarge ? 413 : 400;
    // The rest of an oversized body is never read, so the connection cannot be reused.
    if (status === 413) res.setHeader("connection", "close");
    const why =
      err instanceof ReviewError || err instanceof BodyTooLarge
        ? err.message
        : `invalid JSON: ${(err as Error).message}`;
    return reply(res, status, `not an AdmissionReview: ${why}\n`);
  }
  let warnings: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<string[]>((resolve) => {
      timer = setTimeout(
        () => resolve([`the admission checks did not finish within ${REVIEW_DEADLINE_MS / 1000} s`]),
        REVIEW_DEADLINE_MS,
      );
    });
    warnings = await Promise.race([reviewWarnings(request, o), deadline]);
  } catch (err) {
    // A bug in a check must not turn into a failed call; the write goes through unwarned.
    o.log(
      `admission webhook: checks failed for request ${request.uid}: ${String((err as Error)?.stack ?? err)}`,
    );
  } finally {
    clearTimeout(timer);
  }
  reply(res, 200, allowedReview(request.uid, warnings));
}

export async function startAdmissionServer(o: AdmissionServerOptions): Promise<AdmissionServer> {
  const log = o.log ?? ((m: string) => console.log(JSON.stringify({ level: "info", msg: m })));
  const pair = await readTlsPair(o.tls);
  const handle = admissionHandler({ ...o, log });
  const server: Server = createServer(
    {
      ...pair,
      ...timeoutServerOptions(o.timeouts ?? WEBHOOK_TIMEOUTS),
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    },
    (req, res) => {
      handle(req, res).catch((err) => {
        log(`admission webhook: request failed: ${String(err)}`);
        if (!res.headersSent) reply(res, 500, "internal error\n");
      });
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  answerClientErrors(server, (status) => ({
    contentType: "text/plain",
    body: `not an AdmissionReview: ${status === 408 ? "the request did not arrive in time" : status === 431 ? "the request headers are too large" : "malformed HTTP request"}\n`,
  }));
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
