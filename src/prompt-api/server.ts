/** Serves the prompt API on its own port (8082 by default, Service agent-controller-api). */
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";
import {
  answerClientErrors,
  jsonClientError,
  type RequestTimeouts,
  timeoutServerOptions,
} from "../http-server-limits.js";

export const DEFAULT_PROMPT_API_PORT = 8082;
/**
 * A request (at most 200 KiB) must arrive within 30 s, its headers within 10 s: room for a slow
 * link, none for a client that holds the socket open by trickling bytes (Node's default is 300 s).
 * The time the answer takes (the forward to the pod, 10 s at most) does not count.
 */
export const PROMPT_API_TIMEOUTS: RequestTimeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 5_000,
};

export interface PromptApiServer {
  /** The bound port (useful with port 0 in tests). */
  port: number;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then drops the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startPromptApiServer(
  app: Hono,
  options: { port?: number; host?: string; timeouts?: RequestTimeouts } = {},
): Promise<PromptApiServer> {
  const port = options.port ?? DEFAULT_PROMPT_API_PORT;
  const host = options.host ?? "0.0.0.0";
  const server = createAdaptorServer({
    fetch: app.fetch,
    serverOptions: timeoutServerOptions(options.timeouts ?? PROMPT_API_TIMEOUTS),
  });
  answerClientErrors(server, jsonClientError);
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
