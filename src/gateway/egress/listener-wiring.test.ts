import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { egressAuthorizer } from "../egress-authorize.js";
import { GatewayMetrics } from "../metrics.js";
import type { ProxyDeps } from "../proxy.js";
import { startGatewayServers } from "../server.js";
import { parseCidr } from "./address-policy.js";

const quiet = { info() {}, warn() {}, error() {} };

function proxyDeps(metrics: GatewayMetrics): ProxyDeps {
  return {
    // No model call is made here: the proxy port's dependencies are never used.
    upstreams: {} as ProxyDeps["upstreams"],
    credentialKey: new Uint8Array(32),
    keys: { keyFor: async () => ({ missing: "none" }) },
    runs: { runState: async () => ({ state: "active" }), stationOf: async () => undefined },
    usage: { started() {}, record: async () => {} },
    metrics,
    logger: quiet,
    maxRequestBytes: 1024 * 1024,
    idleTimeoutMs: 600_000,
  };
}

async function rawExchange(port: number, text: string): Promise<string> {
  const socket = connect(port, "127.0.0.1");
  socket.write(text);
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  await once(socket, "close");
  return Buffer.concat(chunks).toString();
}

describe("the egress listener beside the gateway's others (docs/gateway.md#egress-listener)", () => {
  it("listens on its own port; a credential the gateway key did not sign is refused 407 and counted", async () => {
    const metrics = new GatewayMetrics();
    const servers = await startGatewayServers(proxyDeps(metrics), {
      host: "127.0.0.1",
      port: 0,
      metricsPort: 0,
      egress: {
        port: 0,
        deps: {
          authorize: egressAuthorizer({
            credentialKey: Buffer.from("k".repeat(32)),
            runs: { runState: async () => ({ state: "active" }) },
          }),
          privateCidrs: [],
          metrics,
          logger: quiet,
          idleTimeoutMs: 600_000,
        },
      },
    });
    try {
      expect(servers.egressPort).toBeGreaterThan(0);
      expect([servers.port, servers.metricsPort]).not.toContain(servers.egressPort);
      const auth = Buffer.from("agent:agx1.x.y").toString("base64");
      const answer = await rawExchange(
        servers.egressPort as number,
        `CONNECT github.com:443 HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`,
      );
      expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 407 Proxy Authentication Required");
      expect(answer).toContain(
        "\r\n\r\ngateway egress: github.com:443 refused: the proxy credential's signature does not hold (forged, or issued under another key)",
      );
      const scraped = await fetch(`http://127.0.0.1:${servers.metricsPort}/metrics`).then((r) => r.text());
      expect(scraped).toContain('agent_gateway_egress_refusals_total{reason="bad-credential"} 1');
    } finally {
      await servers.close();
    }
  });

  it("closing the gateway ends its open tunnels after the grace, upstream sides included", async () => {
    const accepted: Socket[] = [];
    const upstream = createServer({ allowHalfOpen: true }, (s) => accepted.push(s.on("error", () => {})));
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    const metrics = new GatewayMetrics();
    const servers = await startGatewayServers(proxyDeps(metrics), {
      host: "127.0.0.1",
      port: 0,
      metricsPort: 0,
      egress: {
        port: 0,
        deps: {
          authorize: async () => ({ ok: true, who: { namespace: "ns", name: "a", uid: "u", role: "agent" } }),
          lookup: async () => [{ address: "127.0.0.1", family: 4 }],
          privateCidrs: [parseCidr("127.0.0.1/32") as NonNullable<ReturnType<typeof parseCidr>>],
          metrics,
          logger: quiet,
          idleTimeoutMs: 600_000,
        },
      },
    });
    const client = connect(servers.egressPort as number, "127.0.0.1");
    client.on("error", () => {});
    const auth = Buffer.from("agent:agx1.x.y").toString("base64");
    client.write(`CONNECT up.test:${upstreamPort} HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`);
    const [first] = (await once(client, "data")) as [Buffer];
    expect(first.toString()).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    const clientClosed = once(client, "close");
    const upstreamEnded = once(accepted[0] as Socket, "end");
    // close() resolves only once every connection, the tunnel's included, has ended.
    await servers.close(10);
    await Promise.all([clientClosed, upstreamEnded]);
    for (const s of accepted) s.destroy();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it("without egress settings there is no egress listener", async () => {
    const servers = await startGatewayServers(proxyDeps(new GatewayMetrics()), {
      host: "127.0.0.1",
      port: 0,
      metricsPort: 0,
    });
    await servers.close();
    expect(servers.egressPort).toBeUndefined();
  });
});
