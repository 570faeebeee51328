import { describe, expect, it } from "vitest";
import { DEFAULT_UPSTREAMS, parseGatewayConfig } from "./config.js";

const BASE = {
  GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway-key",
  GATEWAY_MODE: "standalone",
  GATEWAY_PROVIDER_KEYS_DIR: "/keys/providers",
};
const CLUSTER = {
  GATEWAY_CREDENTIAL_KEY_FILE: "/keys/gateway-key",
  GATEWAY_MODE: "cluster",
  GATEWAY_NAMESPACE: "ai-agents",
  GATEWAY_AGENT_SECRETS_DIR: "/var/run/agent-secrets",
};

describe("gateway settings (docs/gateway.md#configuration)", () => {
  it("defaults: the vendors' public APIs, 15 minutes idle, 32 MiB bodies", () => {
    expect(parseGatewayConfig(BASE)).toEqual({
      host: "0.0.0.0",
      port: 8080,
      metricsPort: 9090,
      upstreams: DEFAULT_UPSTREAMS,
      idleTimeoutMs: 900_000,
      maxRequestBytes: 32 * 1024 * 1024,
      credentialKeyFile: "/keys/gateway-key",
      runs: { mode: "standalone", providerKeysDir: "/keys/providers" },
      egressPort: 3128,
      egressPrivateCidrs: [],
    });
  });

  it.each([
    ["0", undefined],
    ["off", undefined],
    ["8888", 8888],
  ])("GATEWAY_EGRESS_PORT=%s: the egress listener's port (off: none)", (raw, port) => {
    expect(parseGatewayConfig({ ...BASE, GATEWAY_EGRESS_PORT: raw }).egressPort).toBe(port);
  });

  it("GATEWAY_EGRESS_PRIVATE_CIDRS: a comma-separated list of IPv4 and IPv6 ranges", () => {
    expect(
      parseGatewayConfig({ ...BASE, GATEWAY_EGRESS_PRIVATE_CIDRS: "10.96.0.0/12, fd00:10::/64" })
        .egressPrivateCidrs,
    ).toEqual([
      { address: "10.96.0.0", prefix: 12, family: "ipv4" },
      { address: "fd00:10::", prefix: 64, family: "ipv6" },
    ]);
  });

  it("cluster mode: the namespace served and the mounted agent-secrets", () => {
    expect(parseGatewayConfig(CLUSTER).runs).toEqual({
      mode: "cluster",
      namespace: "ai-agents",
      agentSecretsDir: "/var/run/agent-secrets",
    });
  });

  it.each([
    [
      { GATEWAY_MODE: undefined },
      "GATEWAY_MODE is not set: cluster or standalone (docs/gateway.md#configuration)",
    ],
    [{ GATEWAY_MODE: "kubernetes" }, 'GATEWAY_MODE="kubernetes": must be cluster or standalone'],
    [{ GATEWAY_NAMESPACE: "" }, "GATEWAY_NAMESPACE is not set (GATEWAY_MODE=cluster)"],
    [{ GATEWAY_NAMESPACE: "AI_Agents" }, 'GATEWAY_NAMESPACE="AI_Agents": not a namespace name'],
    [{ GATEWAY_AGENT_SECRETS_DIR: undefined }, "GATEWAY_AGENT_SECRETS_DIR is not set (GATEWAY_MODE=cluster)"],
    [
      { GATEWAY_PROVIDER_KEYS_DIR: "/keys" },
      "GATEWAY_PROVIDER_KEYS_DIR is set, but GATEWAY_MODE=cluster does not read it",
    ],
  ])("cluster mode: %j is refused naming the variable", (env, message) => {
    expect(() => parseGatewayConfig({ ...CLUSTER, ...env })).toThrow(message);
  });

  it("an upstream is reduced to its origin", () => {
    const config = parseGatewayConfig({ ...BASE, GATEWAY_ANTHROPIC_UPSTREAM: "http://127.0.0.1:9000/" });
    expect(config.upstreams.anthropic).toBe("http://127.0.0.1:9000");
  });

  it.each([
    [{ GATEWAY_CREDENTIAL_KEY_FILE: "" }, "GATEWAY_CREDENTIAL_KEY_FILE is not set"],
    [
      { GATEWAY_PROVIDER_KEYS_DIR: undefined },
      "GATEWAY_PROVIDER_KEYS_DIR is not set (GATEWAY_MODE=standalone)",
    ],
    [
      { GATEWAY_NAMESPACE: "ai-agents" },
      "GATEWAY_NAMESPACE is set, but GATEWAY_MODE=standalone does not read it",
    ],
    [
      { GATEWAY_AGENT_SECRETS_DIR: "/s" },
      "GATEWAY_AGENT_SECRETS_DIR is set, but GATEWAY_MODE=standalone does not read it",
    ],
    [{ GATEWAY_PORT: "80a" }, 'GATEWAY_PORT="80a": must be an integer from 1 to 65535'],
    [{ GATEWAY_EGRESS_PORT: "on" }, 'GATEWAY_EGRESS_PORT="on": must be an integer from 1 to 65535'],
    [{ GATEWAY_EGRESS_PORT: "70000" }, 'GATEWAY_EGRESS_PORT="70000": must be an integer from 1 to 65535'],
    [{ GATEWAY_EGRESS_PORT: "8080" }, "GATEWAY_EGRESS_PORT=8080: already the GATEWAY_PORT"],
    [{ GATEWAY_EGRESS_PORT: "9090" }, "GATEWAY_EGRESS_PORT=9090: already the GATEWAY_METRICS_PORT"],
    [
      { GATEWAY_EGRESS_PRIVATE_CIDRS: "10.0.0.0/8,10.1.2.3" },
      'GATEWAY_EGRESS_PRIVATE_CIDRS: "10.1.2.3" is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)',
    ],
    [
      { GATEWAY_EGRESS_PRIVATE_CIDRS: "10.0.0.0/33" },
      'GATEWAY_EGRESS_PRIVATE_CIDRS: "10.0.0.0/33" is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)',
    ],
    [
      { GATEWAY_EGRESS_PRIVATE_CIDRS: "10.0.0.0/8,," },
      'GATEWAY_EGRESS_PRIVATE_CIDRS: "" is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)',
    ],
    [
      { GATEWAY_IDLE_TIMEOUT_MS: "60000" },
      'GATEWAY_IDLE_TIMEOUT_MS="60000": must be an integer from 600000 to 86400000',
    ],
    [
      { GATEWAY_MAX_REQUEST_BYTES: "-1" },
      'GATEWAY_MAX_REQUEST_BYTES="-1": must be an integer from 1024 to 268435456',
    ],
    [{ GATEWAY_OPENAI_UPSTREAM: "api.openai.com" }, 'GATEWAY_OPENAI_UPSTREAM="api.openai.com": not a URL'],
    [
      { GATEWAY_OPENAI_UPSTREAM: "ftp://api.openai.com" },
      'GATEWAY_OPENAI_UPSTREAM="ftp://api.openai.com": must be an http:// or https:// URL',
    ],
    [
      { GATEWAY_GEMINI_UPSTREAM: "https://u:p@generativelanguage.googleapis.com" },
      'GATEWAY_GEMINI_UPSTREAM="https://u:p@generativelanguage.googleapis.com": must not hold a user or password',
    ],
    [
      { GATEWAY_ANTHROPIC_UPSTREAM: "https://api.anthropic.com/v1" },
      'GATEWAY_ANTHROPIC_UPSTREAM="https://api.anthropic.com/v1": must be an origin only (scheme, host, port), without a path, query or fragment',
    ],
    [
      { GATEWAY_ANTHROPIC_UPSTREAM: "https://api.anthropic.com?x=1" },
      'GATEWAY_ANTHROPIC_UPSTREAM="https://api.anthropic.com?x=1": must be an origin only (scheme, host, port), without a path, query or fragment',
    ],
  ])("%j is refused naming the variable", (env, message) => {
    expect(() => parseGatewayConfig({ ...BASE, ...env })).toThrow(message);
  });
});
