/**
 * What every HTTP server of the project holds its callers to, before any handler runs: how long a
 * request may take to arrive (a slow client otherwise holds a socket and a half-read body for
 * Node's default 300 s), and the answer to a request Node refuses itself (malformed, header
 * overflow, too slow), given in the server's own error shape instead of Node's bare status line.
 */
import type { ServerOptions } from "node:http";
import type { Socket } from "node:net";

export interface RequestTimeouts {
  /** From the connection's first byte (or a kept-alive request's first byte) to the end of the headers. */
  headersMs: number;
  /** From the first byte to the end of the body. */
  requestMs: number;
  /** How long an idle kept-alive connection stays open. */
  keepAliveMs: number;
}

/**
 * Options for `http.createServer` / `https.createServer`. Node checks the two request timeouts on
 * a timer (`connectionsCheckingInterval`, 30 s by default, which would let a 10 s limit run to
 * 40 s), so it is set to a fraction of the shortest limit.
 */
export function timeoutServerOptions(t: RequestTimeouts): ServerOptions {
  return {
    headersTimeout: t.headersMs,
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.keepAliveMs,
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(t.headersMs / 4))),
  };
}

export type ClientErrorStatus = 400 | 408 | 431;

const REASON: Record<ClientErrorStatus, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
};

/** The status Node would answer for a refused request; undefined when the peer is already gone. */
export function clientErrorStatus(err: NodeJS.ErrnoException): ClientErrorStatus | undefined {
  if (err.code === "ECONNRESET" || err.code === "EPIPE") return undefined;
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") return 408;
  if (err.code === "HPE_HEADER_OVERFLOW") return 431;
  return 400;
}

/** The error messages the project's JSON servers (the prompt API, the run pod) give Node's refusals. */
export const CLIENT_ERROR_MESSAGES: Record<ClientErrorStatus, string> = {
  400: "the request is not valid HTTP",
  408: "the request did not arrive in time",
  431: "the request headers are too large",
};

/** `{"error": "<message>"}`, the error body of the prompt API and the run pod. */
export const jsonClientError = (status: ClientErrorStatus) => ({
  contentType: "application/json",
  body: JSON.stringify({ error: CLIENT_ERROR_MESSAGES[status] }),
});

interface EmitsClientErrors {
  on(event: "clientError", listener: (err: Error, socket: Socket) => void): unknown;
}

/**
 * Answers Node's refusals with `render(status)` and closes the connection. Nothing is written when
 * a response on that socket has already started (a request timeout can fire while a handler is
 * answering): a second status line would corrupt it.
 */
export function answerClientErrors(
  server: EmitsClientErrors,
  render: (status: ClientErrorStatus) => { contentType: string; body: string },
): void {
  server.on("clientError", (err, socket) => {
    const status = clientErrorStatus(err as NodeJS.ErrnoException);
    // Node's own default handler makes the same check on this private field.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
      ?.headersSent;
    if (status === undefined || !socket.writable || started) {
      socket.destroy();
      return;
    }
    const { contentType, body } = render(status);
    socket.end(
      `HTTP/1.1 ${status} ${REASON[status]}\r\ncontent-type: ${contentType}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
