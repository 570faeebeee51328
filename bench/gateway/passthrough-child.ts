/**
 * The floor: a minimal undici pass-through to BENCH_UPSTREAM (docs/gateway.md#benchmark), the
 * least any Node proxy on this stack costs. No credential check, no metering, no header rules:
 * the request's body and two headers go up, the answer's status, content type and bytes come back.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";
import { serveParent } from "./child-ipc.js";

const upstream = new Pool(process.env.BENCH_UPSTREAM as string);
const server = createServer((req, res) => {
  upstream
    .stream(
      {
        path: req.url ?? "/",
        method: "POST",
        headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
        body: req,
      },
      ({ statusCode, headers }) => {
        res.writeHead(statusCode, { "content-type": String(headers["content-type"]) });
        res.flushHeaders();
        return res;
      },
    )
    .catch(() => res.destroy());
});
server.keepAliveTimeout = 120_000;
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
serveParent({ port: (server.address() as AddressInfo).port }, {}, async () => {
  server.closeAllConnections();
  await upstream.destroy();
});
