import { describe, expect, it } from "vitest";
import { parseAbsoluteTarget, parseAuthority } from "./target.js";

describe("the egress target (docs/gateway.md#egress-listener)", () => {
  it.each([
    ["github.com:443", { host: "github.com", hostname: "github.com", port: 443 }],
    ["API.GitHub.com:443", { host: "api.github.com", hostname: "api.github.com", port: 443 }],
    ["registry.npmjs.org:65535", { host: "registry.npmjs.org", hostname: "registry.npmjs.org", port: 65535 }],
    ["_acme.example.com:1", { host: "_acme.example.com", hostname: "_acme.example.com", port: 1 }],
    ["203.0.113.7:22", { host: "203.0.113.7", hostname: "203.0.113.7", port: 22 }],
    ["[2001:DB8::1]:443", { host: "[2001:db8::1]", hostname: "2001:db8::1", port: 443 }],
    ["localhost:8080", { host: "localhost", hostname: "localhost", port: 8080 }],
  ])("CONNECT %s", (authority, target) => {
    expect(parseAuthority(authority)).toEqual({ ok: true, target });
  });

  it.each([
    ["github.com", "no port"],
    ["github.com:", "the port must be a number from 1 to 65535"],
    ["github.com:0", "the port must be a number from 1 to 65535"],
    ["github.com:65536", "the port must be a number from 1 to 65535"],
    ["github.com:0443", "the port must be a number from 1 to 65535"],
    ["github.com:+443", "the port must be a number from 1 to 65535"],
    ["github.com:443a", "the port must be a number from 1 to 65535"],
    [":443", "the host is not a DNS name or an IP address"],
    ["git hub.com:443", "the host is not a DNS name or an IP address"],
    ["github..com:443", "the host is not a DNS name or an IP address"],
    ["-github.com:443", "the host is not a DNS name or an IP address"],
    ["github.com.:443", "the host is not a DNS name or an IP address"],
    ["user@github.com:443", "the host is not a DNS name or an IP address"],
    ["githüb.com:443", "the host is not a DNS name or an IP address"],
    [`${"a".repeat(64)}.com:443`, "the host is not a DNS name or an IP address"],
    [`${"a.".repeat(127)}com:443`, "the host is not a DNS name or an IP address"],
    ["::1:443", "an IPv6 address goes in brackets"],
    ["[::1:443", "the host is not a DNS name or an IP address"],
    ["[fe80::1%eth0]:443", "the host is not a DNS name or an IP address"],
    ["[github.com]:443", "the host is not a DNS name or an IP address"],
  ])("CONNECT %j is refused: %s", (authority, why) => {
    expect(parseAuthority(authority)).toEqual({
      ok: false,
      message: `gateway egress: ${JSON.stringify(authority)} is not a valid host:port (${why})`,
    });
  });

  it.each([
    [
      "http://Example.com/a/b?c=d#frag",
      { host: "example.com", port: 80, path: "/a/b?c=d", hostHeader: "example.com" },
    ],
    [
      "http://example.com:8080",
      { host: "example.com", port: 8080, path: "/", hostHeader: "example.com:8080" },
    ],
    ["http://example.com?x", { host: "example.com", port: 80, path: "/?x", hostHeader: "example.com" }],
    ["HTTP://[::1]:81/x", { host: "[::1]", port: 81, path: "/x", hostHeader: "[::1]:81" }],
    ["http://[::1]/x", { host: "[::1]", port: 80, path: "/x", hostHeader: "[::1]" }],
  ])("absolute-form %s", (raw, want) => {
    const parsed = parseAbsoluteTarget(raw);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect({
      host: parsed.target.host,
      port: parsed.target.port,
      path: parsed.path,
      hostHeader: parsed.hostHeader,
    }).toEqual(want);
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
    ["http://user:pw@example.com/", "gateway egress: a proxied URL must not carry a user or password"],
    [
      "http://example.com:0/",
      'gateway egress: "example.com:0" is not a valid host:port (the port must be a number from 1 to 65535)',
    ],
  ])("absolute-form %j is refused", (raw, message) => {
    expect(parseAbsoluteTarget(raw)).toEqual({ ok: false, message });
  });
});
