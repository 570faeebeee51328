/**
 * A tiny HTTP proxy and target on 127.0.0.1 for the tests of the run pod's egress
 * (docs/gateway.md#egress): the proxy tunnels `CONNECT host:port` and forwards absolute-form
 * requests, and records what it saw (the request line and Proxy-Authorization); the target
 * answers every request with 200 and records method, path and body.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect as netConnect, type Socket } from "node:net";

export interface ProxySeen {
  method: string;
  /** `host:port` for CONNECT, the absolute URL otherwise. */
  target: string;
  proxyAuthorization?: string;
}

export interface TargetSeen {
  method: string;
  path: string;
  body: string;
}

export interface TestProxy {
  url: string;
  seen: ProxySeen[];
  close(): Promise<void>;
}

export interface TestTarget {
  origin: string;
  port: number;
  seen: TargetSeen[];
  close(): Promise<void>;
}

function listen(server: Server, host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port)),
  );
}

function closer(server: Server, sockets: Set<Socket>): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
}

function track(server: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  return sockets;
}

const authOf = (req: IncomingMessage) => {
  const v = req.headers["proxy-authorization"];
  return typeof v === "string" ? { proxyAuthorization: v } : {};
};

export async function startTestProxy(): Promise<TestProxy> {
  const seen: ProxySeen[] = [];
  const tunnels = new Set<Socket>();
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", target: req.url ?? "", ...authOf(req) });
    const url = new URL(req.url ?? "");
    const headers = { ...req.headers };
    delete headers["proxy-authorization"];
    const upstream = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
    seen.push({ method: "CONNECT", target: req.url ?? "", ...authOf(req) });
    const [host, port] = (req.url ?? "").split(":");
    const upstream = netConnect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tunnels.add(upstream).add(client);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  const sockets = track(server);
  const port = await listen(server);
  const close = closer(server, sockets);
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => {
      for (const s of tunnels) s.destroy();
      return close();
    },
  };
}

/** A target on `host` (the loopback unless given), answering `answer` to every request. */
export async function startTestTarget(answer = '{"ok":true}', host = "127.0.0.1"): Promise<TestTarget> {
  const seen: TargetSeen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        path: req.url ?? "",
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(200, { "content-type": "application/json" }).end(answer);
    });
  });
  const sockets = track(server);
  const port = await listen(server, host);
  return { origin: `http://${host}:${port}`, port, seen, close: closer(server, sockets) };
}

/** The Proxy-Authorization a client sends for `user:password` (HTTP Basic). */
export const basicProxyAuth = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
