/**
 * Streamed HTTP GET for the init's inputs (spec.files, skills, conversation archives), with the
 * rules of docs/decisions.md D-30: only http:// and https://, at most 5 redirects and never from https to http,
 * 30 s to connect and 60 s of silence at most; a body over 1 GiB, or a download (redirects and body)
 * over 10 minutes, fails, so an endless or huge answer cannot fill the pod's disk or hold the init
 * until the Job's deadline. Every error message is safe to log: it carries
 * neither a header value nor the URL (a presigned URL is itself a credential).
 */
import { constants } from "node:fs";
import { chmod, open, unlink } from "node:fs/promises";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { request } from "undici";
import { outboundDispatcher } from "../common/http-dispatcher.js";
import type { Env } from "../common/run-env.js";

export interface DownloadOptions {
  /** Sent with the request; only to the original origin when a redirect leaves it. */
  headers: Array<[string, string]>;
  maxRedirects: number;
  connectTimeoutMs: number;
  /** Longest wait for the response head and between two body chunks. */
  idleTimeoutMs: number;
  /** Extra trusted CA certificates (PEM). */
  ca?: string;
  /** Largest body written; more fails the download (and removes what was written). */
  maxBytes: number;
  /** The whole download, redirects and body, must finish within this. */
  totalTimeoutMs: number;
  /** Where the egress proxy variables are read from (docs/gateway.md#egress); default process.env. */
  env?: Env;
}

export const DOWNLOAD_DEFAULTS: Readonly<DownloadOptions> = {
  headers: [],
  maxRedirects: 5,
  connectTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  maxBytes: 1024 * 1024 * 1024,
  totalTimeoutMs: 10 * 60_000,
};

/** A download failure whose message names the cause only. */
export class DownloadError extends Error {
  constructor(
    message: string,
    /** The server answered with this non-2xx status (404 tells "missing" apart from "unreachable"). */
    readonly status?: number,
  ) {
    super(message);
    this.name = "DownloadError";
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The first URL of a download: parseable and http(s). */
export function parseDownloadUrl(url: string): { ok: true; url: URL } | { ok: false; cause: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, cause: "the URL is not valid" };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { ok: false, cause: `URL scheme ${parsed.protocol} is not fetched (only http:// and https://)` };
  }
  return { ok: true, url: parsed };
}

/** Where a redirect leads, or why it is not followed. `followed` counts redirects before this one. */
export function followRedirect(
  from: URL,
  location: string | undefined,
  followed: number,
  maxRedirects: number,
): { ok: true; url: URL } | { ok: false; cause: string } {
  if (followed >= maxRedirects) return { ok: false, cause: `more than ${maxRedirects} redirects` };
  if (location === undefined || location === "") return { ok: false, cause: "a redirect without a Location" };
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    return { ok: false, cause: "a redirect to an invalid URL" };
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    return { ok: false, cause: `a redirect to URL scheme ${next.protocol} is not followed` };
  }
  if (from.protocol === "https:" && next.protocol === "http:") {
    return { ok: false, cause: "a redirect from https to http is refused" };
  }
  return { ok: true, url: next };
}

function transportCause(err: unknown, totalTimeoutMs?: number): string {
  const e = err as { code?: string; message?: string; name?: string; cause?: { message?: string } };
  if (totalTimeoutMs !== undefined && (e.name === "AbortError" || e.name === "TimeoutError"))
    return `the download did not finish within ${Math.round(totalTimeoutMs / 1000)} s`;
  if (e.name === "ConnectTimeoutError") return "unreachable: connect timed out";
  if (e.name === "HeadersTimeoutError") return "no response within the idle timeout";
  if (e.name === "BodyTimeoutError") return "the transfer stalled past the idle timeout";
  const detail = e.message || e.cause?.message || e.code || String(err);
  return `unreachable: ${detail}`;
}

/** An error of the destination file itself (its write, sync or close), not of the transfer. */
function isLocalFileError(err: unknown): boolean {
  const syscall = (err as NodeJS.ErrnoException | undefined)?.syscall;
  return syscall === "write" || syscall === "fsync" || syscall === "close" || syscall === "open";
}

export interface OpenDownload {
  body: Readable;
  /** The Content-Length the server announced, if any. */
  length?: number;
  /** Releases the connection pool; call after the body is consumed or abandoned. */
  close(): Promise<void>;
}

/** GETs `url`, following redirects, and resolves once a 2xx response head arrived. */
export async function openDownload(
  url: string,
  options: Partial<DownloadOptions> = {},
): Promise<OpenDownload> {
  const opts = { ...DOWNLOAD_DEFAULTS, ...options };
  const first = parseDownloadUrl(url);
  if (!first.ok) throw new DownloadError(first.cause);
  // Through the gateway's egress proxy when the init's env names one (docs/gateway.md#egress).
  const agent = outboundDispatcher(
    {
      connectTimeoutMs: opts.connectTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
    },
    opts.env,
  );
  const close = () => agent.close().catch(() => undefined);
  // One clock for the redirects and the body: an answer that never ends is cut off.
  const signal = AbortSignal.timeout(opts.totalTimeoutMs);
  const origin = first.url.origin;
  let current = first.url;
  try {
    for (let followed = 0; ; followed++) {
      const headers: Record<string, string> = {};
      // A header block is a credential for its own origin; a redirect elsewhere does not get it.
      if (current.origin === origin) for (const [name, value] of opts.headers) headers[name] = value;
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(current, { method: "GET", headers, dispatcher: agent, signal });
      } catch (err) {
        throw new DownloadError(transportCause(err, opts.totalTimeoutMs));
      }
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const length = Number(res.headers["content-length"]);
        return { body: res.body, close, ...(Number.isSafeInteger(length) ? { length } : {}) };
      }
      await res.body.dump().catch(() => undefined);
      if (!REDIRECT_STATUSES.has(res.statusCode)) {
        throw new DownloadError(`the server answered HTTP ${res.statusCode}`, res.statusCode);
      }
      const location = res.headers.location;
      const next = followRedirect(
        current,
        Array.isArray(location) ? location[0] : location,
        followed,
        opts.maxRedirects,
      );
      if (!next.ok) throw new DownloadError(next.cause);
      current = next.url;
    }
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Streams `url` into `dest` with `mode`: created fresh (an existing regular file is unlinked
 * first, never written through a symlink), only once a 2xx response arrived, so a failed
 * download leaves an existing file in place. A transfer that breaks off removes the partial file.
 */
export async function downloadToFile(
  url: string,
  dest: string,
  options: Partial<DownloadOptions> = {},
  mode = 0o644,
): Promise<void> {
  const maxBytes = options.maxBytes ?? DOWNLOAD_DEFAULTS.maxBytes;
  const totalTimeoutMs = options.totalTimeoutMs ?? DOWNLOAD_DEFAULTS.totalTimeoutMs;
  const tooLarge = () => new DownloadError(`the body is larger than the limit of ${maxBytes} bytes`);
  const download = await openDownload(url, options);
  try {
    if (download.length !== undefined && download.length > maxBytes) throw tooLarge();
    await unlink(dest).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
    const handle = await open(
      dest,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    try {
      let written = 0;
      const capped = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          written += chunk.length;
          callback(written > maxBytes ? tooLarge() : null, chunk);
        },
      });
      await pipeline(download.body, capped, handle.createWriteStream());
    } catch (err) {
      await unlink(dest).catch(() => undefined);
      // The local side failing (a full disk, a read-only mount) is not the download's fault.
      if (isLocalFileError(err)) throw err;
      throw err instanceof DownloadError ? err : new DownloadError(transportCause(err, totalTimeoutMs));
    } finally {
      await handle.close().catch(() => undefined);
    }
    // The process umask must not narrow the documented mode.
    await chmod(dest, mode);
  } finally {
    download.body.destroy();
    await download.close();
  }
}
