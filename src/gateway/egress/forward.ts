/**
 * An absolute-form `http://` request forwarded on a connection the listener opened to a checked
 * address: the body streams up and the answer streams back as they arrive. The proxy's own
 * headers (Proxy-Authorization, Proxy-Connection) and the hop-by-hop ones (Connection,
 * Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, and every header the Connection header
 * names) stay on this hop (docs/gateway.md#egress-listener); the Host header is the URL's authority. One connection per request: a kept-alive connection would outlive the check.
 */
import { type IncomingMessage, request, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** Raw headers (name, value, …) without the hop-by-hop ones and those `Connection` names. */
export function endToEndHeaders(rawHeaders: readonly string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === "connection") {
      for (const token of (rawHeaders[i + 1] as string).split(",")) named.add(token.trim().toLowerCase());
    }
  }
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (HOP_BY_HOP.has(name) || named.has(name)) continue;
    kept.push(rawHeaders[i] as string, rawHeaders[i + 1] as string);
  }
  return kept;
}

export interface ForwardTarget {
  socket: Socket;
  path: string;
  hostHeader: string;
}

/**
 * Resolves once the answer has ended or either side failed. `onUpstreamError` answers a failure
 * that came before the upstream's status line (the caller's 502); a failure after it cuts the
 * answer, as the upstream cut it.
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  target: ForwardTarget,
  idleTimeoutMs: number,
  onUpstreamError: (err: Error) => void,
): Promise<void> {
  return new Promise((resolve) => {
    const upstream = request({
      method: req.method,
      path: target.path,
      headers: ["Host", target.hostHeader, ...endToEndHeaders(req.rawHeaders)],
      // Without an agent: this one connection, not a pool's (`agent: false` would make a new agent that dials itself).
      createConnection: () => target.socket,
    });
    upstream.setTimeout(idleTimeoutMs, () => upstream.destroy(new Error("upstream idle timeout")));
    upstream.on("error", (err) => {
      // A client that went away is no upstream failure: nothing to answer, nothing to count.
      if (!res.destroyed && !res.headersSent) onUpstreamError(err);
      else res.destroy();
      resolve();
    });
    upstream.on("response", (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEndHeaders(answer.rawHeaders));
      answer.pipe(res);
      answer.on("error", () => res.destroy());
      res.on("close", () => {
        answer.destroy();
        resolve();
      });
    });
    req.on("error", () => upstream.destroy());
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
}
