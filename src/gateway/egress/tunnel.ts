/**
 * A CONNECT tunnel once both ends are open: the bytes the client sent after its request head go
 * first, then each side is piped to the other. An end on one side half-closes the other (a TLS
 * client may still read), an error or a close of either side destroys both, and a silence of
 * `idleTimeoutMs` on either socket ends the tunnel. There is no total duration.
 */
import type { Socket } from "node:net";

export function joinTunnel(client: Socket, upstream: Socket, head: Buffer, idleTimeoutMs: number): void {
  const closeBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const side of [client, upstream]) {
    side.on("error", closeBoth);
    side.on("close", closeBoth);
    side.setTimeout(idleTimeoutMs, closeBoth);
  }
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
}
