import { once } from "node:events";
import { createServer as createHttpServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayMetrics } from "../metrics.js";
import { type Cidr, parseCidr, type ResolvedAddress } from "./address-policy.js";
import {
  type EgressDecision,
  type EgressDeps,
  EgressProxy,
  type EgressRefusal,
  type EgressTunnel,
  type EgressWho,
} from "./proxy-server.js";

const WHO: EgressWho = { namespace: "ai-agents", name: "fix-bug", uid: "u-1", role: "agent" };
const GOOD = "agx1.good.mac";
const basic = (credential: string, user = "agent") =>
  `Basic ${Buffer.from(`${user}:${credential}`).toString("base64")}`;
const quiet = { info() {}, warn() {}, error() {} };
const cidrs = (...list: string[]) => list.map((c) => parseCidr(c) as Cidr);

const closers: Array<() => unknown> = [];
/** Every socket a test opened or accepted: destroyed first, so no tunnel holds a server open. */
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const close of closers.splice(0).reverse()) await close();
});

function listening<S extends Server | ReturnType<typeof createTcpServer>>(
  server: S,
  host = "127.0.0.1",
): Promise<number> {
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        (server as Server).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return new Promise((resolve) =>
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port)),
  );
}

/** A TCP server answering each chunk with `<prefix><chunk>`; its sockets are kept for the test to watch. */
async function echoServer(prefix = "", host = "127.0.0.1", port = 0) {
  const accepted: Socket[] = [];
  const server = createTcpServer({ allowHalfOpen: true }, (socket) => {
    accepted.push(socket);
    sockets.push(socket);
    socket.on("error", () => {});
    socket.on("data", (chunk) => socket.write(`${prefix}${chunk}`));
  });
  const bound =
    port === 0
      ? await listening(server, host)
      : await new Promise<number>((resolve) => server.listen(port, host, () => resolve(port)));
  if (port !== 0) closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: bound, sockets: accepted, connected: once(server, "connection") };
}

interface Harness {
  port: number;
  metrics: GatewayMetrics;
  refusals: EgressRefusal[];
  tunnels: EgressTunnel[];
  authorized: string[];
  looked: string[];
}

/**
 * The listener on 127.0.0.1 with an `authorize` that knows one credential, allowed exactly
 * `allowed` (`host:port`), and a lookup answering from `dns`.
 */
async function startProxy(options: {
  allowed?: string[];
  dns?: Record<string, ResolvedAddress[]>;
  privateCidrs?: Cidr[];
  connectTimeoutMs?: number;
  /** The message authorize throws with, instead of deciding. */
  authorizeThrows?: string;
}): Promise<Harness> {
  const allowed = new Set(options.allowed ?? []);
  const h: Omit<Harness, "port"> = {
    metrics: new GatewayMetrics(),
    refusals: [],
    tunnels: [],
    authorized: [],
    looked: [],
  };
  const deps: EgressDeps = {
    authorize: async (credential, host, port): Promise<EgressDecision> => {
      h.authorized.push(`${host}:${port}`);
      if (options.authorizeThrows !== undefined) throw new Error(options.authorizeThrows);
      if (credential !== GOOD)
        return { ok: false, status: 407, reason: "the credential's signature does not hold" };
      if (!allowed.has(`${host}:${port}`)) {
        return { ok: false, status: 403, reason: "not among the destinations signed for it", who: WHO };
      }
      return { ok: true, who: WHO };
    },
    lookup: async (hostname) => {
      h.looked.push(hostname);
      const answer = options.dns?.[hostname];
      if (answer === undefined) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return answer;
    },
    privateCidrs: options.privateCidrs ?? [],
    onRefused: (e) => h.refusals.push(e),
    onTunnel: (e) => h.tunnels.push(e),
    metrics: h.metrics,
    logger: quiet,
    idleTimeoutMs: 600_000,
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
  };
  const server = new EgressProxy(deps).createServer();
  return { ...h, port: await listening(server) };
}

/** Reads a raw HTTP answer head; `rest` holds whatever came after it. */
function readHead(socket: Socket): Promise<{ status: number; head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.pause();
      const head = buf.subarray(0, end).toString("latin1");
      resolve({ status: Number(head.split(" ")[1]), head, rest: buf.subarray(end + 4) });
    };
    socket.on("data", onData);
    socket.once("error", reject);
    socket.once("end", () => reject(new Error(`connection ended after ${JSON.stringify(buf.toString())}`)));
  });
}

/** Reads from the socket until `want` bytes have arrived. */
async function readBytes(socket: Socket, want: number, already: Buffer = Buffer.alloc(0)): Promise<string> {
  let buf = already;
  socket.resume();
  while (buf.length < want) {
    const [chunk] = (await once(socket, "data")) as [Buffer];
    buf = Buffer.concat([buf, chunk]);
  }
  return buf.toString();
}

/** Sends a raw request on a fresh connection and reads the whole answer (the listener closes it). */
async function rawExchange(
  port: number,
  text: string,
): Promise<{ status: number; head: string; body: string }> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  socket.write(text);
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  await once(socket, "close");
  const all = Buffer.concat(chunks).toString("utf8");
  const end = all.indexOf("\r\n\r\n");
  const head = all.slice(0, end);
  return { status: Number(head.split(" ")[1]), head, body: all.slice(end + 4) };
}

/** A CONNECT request head; `auth: null` sends no Proxy-Authorization. */
const connectRequest = (target: string, auth: string | null = basic(GOOD)) =>
  `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth === null ? "" : `Proxy-Authorization: ${auth}\r\n`}\r\n`;

async function counted(metrics: GatewayMetrics, which: "egressTunnels" | "egressRefusals") {
  const values = (await metrics[which].get()).values;
  return Object.fromEntries(values.map((v) => [Object.values(v.labels)[0], v.value]));
}

describe("the egress listener's CONNECT tunnels (docs/gateway.md#egress-listener)", () => {
  it("an allowed destination is tunnelled: the bytes sent with the request first, then both ways", async () => {
    const echo = await echoServer("echo:");
    const proxy = await startProxy({
      allowed: [`echo.test:${echo.port}`],
      dns: { "echo.test": [{ address: "127.0.0.1", family: 4 }] },
      privateCidrs: cidrs("127.0.0.1/32"),
    });
    const client = connect(proxy.port, "127.0.0.1");
    sockets.push(client);
    // The request and the first tunnel bytes in one write: the listener gets them as its head buffer.
    client.write(`${connectRequest(`echo.test:${echo.port}`)}hello`);
    const answer = await readHead(client);
    expect(answer.head).toBe("HTTP/1.1 200 Connection Established");
    expect(await readBytes(client, "echo:hello".length, answer.rest)).toBe("echo:hello");
    client.write("again");
    expect(await readBytes(client, "echo:again".length)).toBe("echo:again");
    expect(proxy.tunnels).toEqual([
      { who: WHO, host: "echo.test", port: echo.port, address: "127.0.0.1", mode: "connect" },
    ]);
    expect(await counted(proxy.metrics, "egressTunnels")).toEqual({ connect: 1 });
  });

  it("a destination the credential does not allow is a 403 naming the run, the role and why; nothing is resolved", async () => {
    const proxy = await startProxy({ allowed: ["github.com:443"] });
    const res = await rawExchange(proxy.port, connectRequest("evil.example:443"));
    expect(res.status).toBe(403);
    expect(res.body).toBe(
      "gateway egress: evil.example:443 refused for the agent of Agent ai-agents/fix-bug: not among the destinations signed for it",
    );
    expect(res.head).toContain("Content-Type: text/plain; charset=utf-8");
    expect(proxy.looked).toEqual([]);
    expect(proxy.refusals).toEqual([
      {
        who: WHO,
        host: "evil.example",
        port: 443,
        status: 403,
        kind: "forbidden",
        reason: "not among the destinations signed for it",
      },
    ]);
    expect(await counted(proxy.metrics, "egressRefusals")).toEqual({ forbidden: 1 });
  });

  it.each([
    ["no Proxy-Authorization", null, "no Proxy-Authorization (the run's proxy credential)", false],
    ["a Bearer token", "Bearer agx1.good.mac", "Proxy-Authorization is not Basic", false],
    ["garbled base64", "Basic %%%", "Proxy-Authorization is not valid base64", false],
    [
      "no user:password",
      `Basic ${Buffer.from(GOOD).toString("base64")}`,
      "Proxy-Authorization holds no user:password",
      false,
    ],
    [
      "a credential authorize rejects",
      basic("agx1.forged.mac"),
      "the credential's signature does not hold",
      true,
    ],
  ])("%s is a 407 asking for Basic credentials", async (_what, auth, reason, asked) => {
    const proxy = await startProxy({ allowed: ["github.com:443"] });
    const res = await rawExchange(proxy.port, connectRequest("github.com:443", auth));
    expect(res.status).toBe(407);
    expect(res.head).toContain('Proxy-Authenticate: Basic realm="agent-gateway"');
    expect(res.body).toBe(`gateway egress: github.com:443 refused: ${reason}`);
    expect(proxy.authorized).toEqual(asked ? ["github.com:443"] : []);
    expect(proxy.refusals.map((r) => r.status)).toEqual([407]);
  });

  it("an authorize that cannot tell (it throws) is a 503: refused, never let through", async () => {
    const proxy = await startProxy({
      allowed: ["github.com:443"],
      authorizeThrows: "the API server did not answer",
    });
    const res = await rawExchange(proxy.port, connectRequest("github.com:443"));
    expect(res.status).toBe(503);
    expect(res.body).toBe(
      "gateway egress: github.com:443 refused: the run could not be confirmed: the API server did not answer",
    );
    expect(proxy.looked).toEqual([]);
    expect(proxy.refusals.map((r) => r.kind)).toEqual(["unavailable"]);
  });

  it.each([
    ["10.0.0.1", 4, "echo.test resolves to 10.0.0.1, a private address"],
    ["127.0.0.1", 4, "echo.test resolves to 127.0.0.1, a loopback address"],
    ["::ffff:127.0.0.1", 6, "echo.test resolves to ::ffff:127.0.0.1, a loopback address"],
    ["169.254.169.254", 4, "echo.test resolves to 169.254.169.254, a link-local address"],
  ])("a name resolving to %s is refused", async (address, family, why) => {
    const proxy = await startProxy({
      allowed: ["echo.test:443"],
      dns: { "echo.test": [{ address, family }] },
    });
    const res = await rawExchange(proxy.port, connectRequest("echo.test:443"));
    expect(res.status).toBe(403);
    expect(res.body).toBe(
      `gateway egress: echo.test:443 refused for the agent of Agent ai-agents/fix-bug: ${why} (GATEWAY_EGRESS_PRIVATE_CIDRS does not include it)`,
    );
    expect(proxy.refusals.map((r) => r.kind)).toEqual(["private-address"]);
  });

  it("an IP literal is checked as the address it is, without a lookup", async () => {
    const echo = await echoServer();
    const proxy = await startProxy({ allowed: [`127.0.0.1:${echo.port}`] });
    const res = await rawExchange(proxy.port, connectRequest(`127.0.0.1:${echo.port}`));
    expect(res.body).toBe(
      `gateway egress: 127.0.0.1:${echo.port} refused for the agent of Agent ai-agents/fix-bug: 127.0.0.1 is a loopback address (GATEWAY_EGRESS_PRIVATE_CIDRS does not include it)`,
    );
    expect(proxy.looked).toEqual([]);
  });

  it("a name resolving to a refused and a permitted address is connected to the permitted one only", async () => {
    // 127.0.0.2 stands for the refused address (loopback, outside the allowed /32): a server listens
    // there too, so connecting to it would succeed and say so.
    const permitted = await echoServer("permitted:");
    await echoServer("refused:", "127.0.0.2", permitted.port);
    const proxy = await startProxy({
      allowed: [`both.test:${permitted.port}`],
      dns: {
        "both.test": [
          { address: "127.0.0.2", family: 4 },
          { address: "127.0.0.1", family: 4 },
        ],
      },
      privateCidrs: cidrs("127.0.0.1/32"),
    });
    const client = connect(proxy.port, "127.0.0.1");
    sockets.push(client);
    client.write(`${connectRequest(`both.test:${permitted.port}`)}x`);
    const answer = await readHead(client);
    expect(answer.status).toBe(200);
    expect(await readBytes(client, "permitted:x".length, answer.rest)).toBe("permitted:x");
    expect(proxy.tunnels.map((t) => t.address)).toEqual(["127.0.0.1"]);
  });

  it("a destination that does not accept the connection is a 502 naming it and the error", async () => {
    const closed = createTcpServer();
    const port = await listening(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const proxy = await startProxy({
      allowed: [`gone.test:${port}`],
      dns: { "gone.test": [{ address: "127.0.0.1", family: 4 }] },
      privateCidrs: cidrs("127.0.0.0/8"),
    });
    const res = await rawExchange(proxy.port, connectRequest(`gone.test:${port}`));
    expect(res.status).toBe(502);
    expect(res.body).toBe(
      `gateway egress: cannot connect to gone.test:${port}: 127.0.0.1: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    expect(proxy.refusals.map((r) => [r.status, r.kind])).toEqual([[502, "connect-failed"]]);
  });

  it("a name that does not resolve is a 502 naming it", async () => {
    const proxy = await startProxy({ allowed: ["nowhere.test:443"] });
    const res = await rawExchange(proxy.port, connectRequest("nowhere.test:443"));
    expect(res.status).toBe(502);
    expect(res.body).toBe("gateway egress: cannot resolve nowhere.test: ENOTFOUND");
  });

  it.each([
    ["github.com", "no port"],
    ["github.com:0", "the port must be a number from 1 to 65535"],
    ["github.com:70000", "the port must be a number from 1 to 65535"],
    ["::1:443", "an IPv6 address goes in brackets"],
    ["git_hub!.com:443", "the host is not a DNS name or an IP address"],
  ])("CONNECT %s is a 400", async (target, why) => {
    const proxy = await startProxy({ allowed: [target] });
    const res = await rawExchange(proxy.port, connectRequest(target));
    expect(res.status).toBe(400);
    expect(res.body).toBe(`gateway egress: ${JSON.stringify(target)} is not a valid host:port (${why})`);
    expect(proxy.authorized).toEqual([]);
    expect(await counted(proxy.metrics, "egressRefusals")).toEqual({ "bad-request": 1 });
  });

  it("a request head over the bound is a 431", async () => {
    const proxy = await startProxy({ allowed: ["github.com:443"] });
    const res = await rawExchange(
      proxy.port,
      `CONNECT github.com:443 HTTP/1.1\r\nProxy-Authorization: ${basic("x".repeat(40_000))}\r\n\r\n`,
    );
    expect(res.status).toBe(431);
    expect(proxy.authorized).toEqual([]);
  });

  it("a client that goes away mid-tunnel takes the upstream connection with it", async () => {
    const echo = await echoServer();
    const proxy = await startProxy({
      allowed: [`echo.test:${echo.port}`],
      dns: { "echo.test": [{ address: "127.0.0.1", family: 4 }] },
      privateCidrs: cidrs("127.0.0.1/32"),
    });
    const client = connect(proxy.port, "127.0.0.1");
    client.on("error", () => {});
    client.write(connectRequest(`echo.test:${echo.port}`));
    expect((await readHead(client)).status).toBe(200);
    await echo.connected;
    const upstream = echo.sockets[0] as Socket;
    // The upstream keeps its side open on a mere end (allowHalfOpen): only the tunnel's teardown closes it.
    const upstreamGone = new Promise((resolve) => {
      upstream.once("end", resolve);
      upstream.once("close", resolve);
    });
    client.resetAndDestroy();
    await upstreamGone;
  });
});

describe("the egress listener's plain http requests (docs/gateway.md#egress-listener)", () => {
  async function originServer() {
    const seen: { url?: string; headers?: IncomingHttpHeaders; body?: string } = {};
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        Object.assign(seen, { url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.writeHead(201, { "x-answer": "yes", connection: "x-answer-hop", "x-answer-hop": "1" });
        res.end(`got ${seen.body}`);
      });
    });
    return { port: await listening(server), seen };
  }

  function viaProxy(
    proxyPort: number,
    path: string,
    headers: Record<string, string>,
    body = "",
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: "127.0.0.1", port: proxyPort, method: "POST", path, headers, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
            }),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  it("an absolute-form request is forwarded without the proxy's and the hop-by-hop headers", async () => {
    const origin = await originServer();
    const proxy = await startProxy({
      allowed: [`origin.test:${origin.port}`],
      dns: { "origin.test": [{ address: "127.0.0.1", family: 4 }] },
      privateCidrs: cidrs("127.0.0.1/32"),
    });
    const res = await viaProxy(
      proxy.port,
      `http://origin.test:${origin.port}/repo/info?service=git-upload-pack`,
      {
        "proxy-authorization": basic(GOOD),
        "proxy-connection": "keep-alive",
        connection: "x-hop",
        "x-hop": "dropped",
        "x-end": "kept",
      },
      "request body",
    );
    expect(origin.seen.url).toBe("/repo/info?service=git-upload-pack");
    expect(origin.seen.headers?.host).toBe(`origin.test:${origin.port}`);
    expect(origin.seen.headers?.["x-end"]).toBe("kept");
    expect(origin.seen.headers).not.toHaveProperty("proxy-authorization");
    expect(origin.seen.headers).not.toHaveProperty("proxy-connection");
    expect(origin.seen.headers).not.toHaveProperty("x-hop");
    expect(origin.seen.body).toBe("request body");
    expect(res.status).toBe(201);
    expect(res.body).toBe("got request body");
    expect(res.headers["x-answer"]).toBe("yes");
    expect(res.headers).not.toHaveProperty("x-answer-hop");
    expect(proxy.tunnels.map((t) => t.mode)).toEqual(["forward"]);
  });

  it("an absolute-form request to a destination the credential does not allow is a 403", async () => {
    const proxy = await startProxy({ allowed: [] });
    const res = await viaProxy(proxy.port, "http://example.com/", { "proxy-authorization": basic(GOOD) });
    expect(res.status).toBe(403);
    expect(res.body).toBe(
      "gateway egress: example.com:80 refused for the agent of Agent ai-agents/fix-bug: not among the destinations signed for it",
    );
  });

  it.each([
    [
      "/index.html",
      "gateway egress: this port is an HTTP proxy: send CONNECT host:port, or a request for an absolute http:// URL",
    ],
    [
      "https://example.com/",
      "gateway egress: only http:// URLs are forwarded; reach https:// destinations through CONNECT",
    ],
  ])("%s is a 400", async (path, message) => {
    const proxy = await startProxy({ allowed: ["example.com:443", "example.com:80"] });
    const res = await viaProxy(proxy.port, path, { "proxy-authorization": basic(GOOD) });
    expect(res.status).toBe(400);
    expect(res.body).toBe(message);
    expect(proxy.authorized).toEqual([]);
  });
});
