/** Serves the prompt API on its own port (8082 by default, Service agent-controller-api). */
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";

export const DEFAULT_PROMPT_API_PORT = 8082;

export interface PromptApiServer {
  /** The bound port (useful with port 0 in tests). */
  port: number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then drops the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startPromptApiServer(
  app: Hono,
  options: { port?: number; host?: string } = {},
): Promise<PromptApiServer> {
  const port = options.port ?? DEFAULT_PROMPT_API_PORT;
  const host = options.host ?? "0.0.0.0";
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) =>
      reject(new Error(`prompt API cannot listen on ${host}:${port}: ${err.message}`));
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const http = server as import("node:http").Server;
  return {
    port: bound,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => http.closeAllConnections(), graceMs);
        force.unref();
        http.close(() => {
          clearTimeout(force);
          resolve();
        });
        http.closeIdleConnections();
      }),
  };
}
