/** /healthz, /readyz and /metrics on HEALTH_PORT (node:http, no framework needed for three GETs). */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

export interface HealthSources {
  registry: Registry;
  /** Process is alive and its loops are not wedged. */
  healthy: () => boolean;
  /** Leader with a synced cache, or a healthy standby. */
  ready: () => boolean;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(
  port: number,
  s: HealthSources,
  host = "0.0.0.0",
): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405).end();
      return;
    }
    if (path === "/healthz" || path === "/readyz") {
      const ok = path === "/healthz" ? s.healthy() : s.ready();
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ok\n" : "not ready\n");
      return;
    }
    if (path === "/metrics") {
      s.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": s.registry.contentType }).end(text),
        (err) => res.writeHead(500).end(String(err)),
      );
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
