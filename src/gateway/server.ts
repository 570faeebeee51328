/**
 * The gateway's listeners (docs/gateway.md#ports): the proxy port the run pods call (a Hono
 * app whose one route hands the Node request to proxyRequest, which answers on the Node response
 * itself so each chunk is written as it arrives), a metrics port with `/metrics` and
 * `/healthz` that the run pods have no reason to reach, and, when configured, the egress
 * listener the run pods' HTTPS_PROXY names (egress/proxy-server.ts).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer, type HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { answerClientErrors, jsonClientError, timeoutServerOptions } from "../http-server-limits.js";
import { type EgressDeps, EgressProxy } from "./egress/proxy-server.js";
import { type ProxyDeps, proxyRequest } from "./proxy.js";

export interface GatewayServerOptions {
  port: number;
  host: string;
  metricsPort: number;
  /** The egress listener (docs/gateway.md#egress-listener): its port and what it is wired to; none when absent. */
  egress?: { port: number; deps: EgressDeps };
}

export interface GatewayServers {
  port: number;
  metricsPort: number;
  /** The egress listener's port, when it listens. */
  egressPort?: number;
  close(graceMs?: number): Promise<void>;
}

/** The time a request's headers may take to arrive; the body and the answer are bounded by the idle timeout. */
export const HEADERS_TIMEOUT_MS = 60_000;
/** How long an idle kept-alive client connection stays open: longer than the CLIs' pools expect. */
export const KEEP_ALIVE_MS = 120_000;

export function gatewayApp(deps: ProxyDeps): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.all("*", async (c) => {
    const res = c.env.outgoing;
    try {
      await proxyRequest(c.env.incoming, res, deps);
    } catch (err) {
      // A fault of the gateway itself: never leave the client waiting on a half-written answer.
      deps.logger.error("request failed", { error: String((err as Error)?.stack ?? err) });
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { "content-type": "application/json", connection: "close" });
        res.end(JSON.stringify({ error: { message: "gateway: internal error" } }));
      } else if (!res.writableEnded) res.destroy();
    }
    return RESPONSE_ALREADY_SENT;
  });
  return app;
}

function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) =>
      reject(new Error(`gateway cannot listen on ${host}:${port} (${what}): ${err.message}`));
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Closes the server; after `graceMs` its connections are cut, and `forceAlso` ends what it does not track. */
function closeServer(server: Server, graceMs: number, forceAlso?: () => void): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.closeAllConnections();
      forceAlso?.();
    }, graceMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}

export async function startGatewayServers(
  deps: ProxyDeps,
  options: GatewayServerOptions,
): Promise<GatewayServers> {
  const proxy = createAdaptorServer({
    fetch: gatewayApp(deps).fetch,
    serverOptions: timeoutServerOptions({
      headersMs: HEADERS_TIMEOUT_MS,
      // A request body may take as long as any other silence on the path (Node's default is 300 s).
      requestMs: deps.idleTimeoutMs,
      keepAliveMs: KEEP_ALIVE_MS,
    }),
  }) as Server;
  // A socket silent for the idle bound is closed; a stream that keeps sending is never cut.
  proxy.setTimeout(deps.idleTimeoutMs);
  answerClientErrors(proxy, jsonClientError);
  const metrics = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/metrics") {
      deps.metrics.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { "content-type": deps.metrics.registry.contentType });
          res.end(text);
        })
        .catch((err: Error) => {
          res.writeHead(500, { "content-type": "text/plain" });
          res.end(err.message);
        });
      return;
    }
    if (req.method === "GET" && req.url === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found");
  });
  const port = await listen(proxy, options.port, options.host, "proxy");
  const metricsPort = await listen(metrics, options.metricsPort, options.host, "metrics");
  const egressProxy = options.egress ? new EgressProxy(options.egress.deps) : undefined;
  const egress = egressProxy?.createServer();
  const egressPort =
    egress && options.egress ? await listen(egress, options.egress.port, options.host, "egress") : undefined;
  return {
    port,
    metricsPort,
    ...(egressPort !== undefined ? { egressPort } : {}),
    close: async (graceMs = 5_000) => {
      await Promise.all([
        closeServer(proxy, graceMs),
        closeServer(metrics, graceMs),
        // A tunnel is no HTTP connection: the egress proxy ends those itself.
        ...(egress ? [closeServer(egress, graceMs, () => egressProxy?.closeTunnels())] : []),
      ]);
    },
  };
}
