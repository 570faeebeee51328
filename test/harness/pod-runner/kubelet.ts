/**
 * The runner node's kubelet endpoint: the API server proxies `pods/log` to
 * `GET https://<node InternalIP>:<kubeletEndpoint.Port>/containerLogs/<ns>/<pod>/<container>`, so
 * `kubectl logs` and `readNamespacedPodLog` reach this server. HTTPS with a certificate from the
 * plane's CA; the API server runs without --kubelet-certificate-authority, like kwok's endpoint.
 */
import { open, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type LogReadOptions, logOptionsFromQuery, readCriLog } from "./logs.js";

/** Where a container's log is, or why it cannot be read (kubelet wording). */
export type LogSource = { file: string; running: () => boolean } | { status: number; message: string };

export interface KubeletServerOptions {
  cert: Buffer;
  key: Buffer;
  host: string;
  port: number;
  findLog(namespace: string, pod: string, container: string): LogSource;
  /** Where request errors go (the runner's log file). */
  onError(message: string): void;
}

/** Complete CRI lines of `file` from byte `offset`; returns the text and the new offset. */
async function readComplete(file: string, offset: number): Promise<{ text: string; offset: number }> {
  const handle = await open(file, "r");
  try {
    const { size } = await handle.stat();
    if (size <= offset) return { text: "", offset };
    const buf = Buffer.alloc(size - offset);
    await handle.read(buf, 0, buf.length, offset);
    const end = buf.lastIndexOf(0x0a);
    if (end < 0) return { text: "", offset };
    return { text: buf.subarray(0, end + 1).toString("utf8"), offset: offset + end + 1 };
  } finally {
    await handle.close();
  }
}

async function follow(
  source: { file: string; running: () => boolean },
  opts: LogReadOptions,
  write: (s: string) => boolean,
  closed: () => boolean,
): Promise<void> {
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  const emit = (text: string, o: LogReadOptions) => {
    let out = readCriLog(text, { ...o, limitBytes: undefined });
    const bytes = Buffer.byteLength(out);
    if (bytes > budget) out = Buffer.from(out).subarray(0, budget).toString("utf8");
    budget -= Math.min(bytes, budget);
    if (out !== "") write(out);
  };
  let { text, offset } = await readComplete(source.file, 0);
  emit(text, opts);
  const rest: LogReadOptions = { ...(opts.timestamps ? { timestamps: true } : {}) };
  while (budget > 0 && !closed()) {
    const wasRunning = source.running();
    ({ text, offset } = await readComplete(source.file, offset));
    emit(text, rest);
    // The container ended and everything it wrote has been sent.
    if (!wasRunning && text === "") return;
    if (text === "") await sleep(100);
  }
}

export function startKubeletServer(options: KubeletServerOptions): Promise<Server> {
  const server = createServer({ cert: options.cert, key: options.key }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://kubelet");
    const fail = (status: number, message: string) => {
      res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
      res.end(message);
    };
    if (url.pathname === "/healthz") return fail(200, "ok");
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (req.method !== "GET" || !m) return fail(404, `pod runner kubelet: no handler for ${url.pathname}`);
    const [ns, pod, container] = [m[1], m[2], m[3]].map((s) => decodeURIComponent(s ?? ""));
    let opts: ReturnType<typeof logOptionsFromQuery>;
    try {
      opts = logOptionsFromQuery(url.searchParams);
    } catch (err) {
      return fail(400, (err as Error).message);
    }
    const source = options.findLog(ns ?? "", pod ?? "", container ?? "");
    if ("status" in source) return fail(source.status, source.message);
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    let closed = false;
    res.on("close", () => {
      closed = true;
    });
    const work = opts.follow
      ? follow(
          source,
          opts,
          (s) => res.write(s),
          () => closed,
        )
      : readFile(source.file, "utf8").then((text) => {
          res.write(readCriLog(text, opts));
        });
    work
      .catch((err: Error) => options.onError(`containerLogs ${ns}/${pod}/${container}: ${err.message}`))
      .finally(() => res.end());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

export function serverPort(server: Server): number {
  return (server.address() as AddressInfo).port;
}
