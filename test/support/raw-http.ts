/**
 * A hand-written HTTP/1.1 client for the servers' own limits: writes `parts` over a plain TCP
 * connection `gapMs` apart (a slow-loris client, a malformed request, a body the server should not
 * read) and returns everything the server sent until the connection closed.
 */
import { connect } from "node:net";

export function rawHttpExchange(port: number, parts: string[], gapMs = 0, end = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, async () => {
      for (const part of parts) {
        if (socket.destroyed || socket.writableEnded) break;
        socket.write(part);
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
      // With `end` the client closes its side once all is written, as a real client that
      // finished its request would.
      if (end && !socket.destroyed) socket.end();
    });
    let text = "";
    socket.on("data", (d) => {
      text += d;
    });
    socket.on("close", () => resolve(text));
    socket.on("error", (err: NodeJS.ErrnoException) => {
      // The server may reset a connection it refused while the client is still writing.
      if (err.code === "ECONNRESET" || err.code === "EPIPE") resolve(text);
      else reject(err);
    });
  });
}

/** The body of a raw HTTP answer (after the blank line). */
export const rawBody = (answer: string): string => answer.slice(answer.indexOf("\r\n\r\n") + 4);

/** A POST whose declared body never fully arrives: the head, then one byte per part. */
export function tricklingPost(path: string, headers: Record<string, string> = {}, parts = 40): string[] {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return [
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n${extra}\r\n`,
    ...Array.from({ length: parts }, () => " "),
  ];
}
