/**
 * The destination a proxy request names (docs/gateway.md#egress-listener), validated strictly
 * before anything is looked up: `CONNECT host:port` (authority form) and the authority of an
 * absolute `http://` URL. A host is a DNS name (letters, digits, `-`, `_`, dots; at most 253
 * characters, labels of at most 63), an IPv4 literal, or an IPv6 literal in brackets; a port is
 * 1 to 65535 without leading zeros. The host is lower-cased, the form the signed destinations use.
 */
import { isIPv4, isIPv6 } from "node:net";

export interface EgressTarget {
  /** As the destinations and the messages write it: lower-cased, an IPv6 literal in brackets. */
  host: string;
  /** What is resolved or connected to: the host without brackets. */
  hostname: string;
  port: number;
}

export type TargetParse = { ok: true; target: EgressTarget } | { ok: false; message: string };

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const PORT = /^[1-9][0-9]{0,4}$/;
const IPV6_CHARS = /^[0-9a-f:.]+$/;

function parseHost(raw: string): { host: string; hostname: string } | undefined {
  const lower = raw.toLowerCase();
  if (lower.startsWith("[")) {
    if (!lower.endsWith("]")) return undefined;
    const inner = lower.slice(1, -1);
    // No zone ids (`%eth0`): a zone names an interface of the gateway's own host.
    if (!IPV6_CHARS.test(inner) || !isIPv6(inner)) return undefined;
    return { host: lower, hostname: inner };
  }
  if (isIPv4(lower)) return { host: lower, hostname: lower };
  if (lower.length > 253 || !lower.split(".").every((label) => LABEL.test(label))) return undefined;
  return { host: lower, hostname: lower };
}

function parsePort(raw: string): number | undefined {
  if (!PORT.test(raw)) return undefined;
  const port = Number(raw);
  return port <= 65535 ? port : undefined;
}

/** `host:port` (`[v6]:port`), the target of a CONNECT request. */
export function parseAuthority(authority: string): TargetParse {
  const bad = (why: string): TargetParse => ({
    ok: false,
    message: `gateway egress: ${JSON.stringify(authority.slice(0, 300))} is not a valid host:port (${why})`,
  });
  const colon = authority.lastIndexOf(":");
  if (colon < 0) return bad("no port");
  const rawHost = authority.slice(0, colon);
  const host = parseHost(rawHost);
  if (host === undefined) {
    return bad(
      rawHost.includes(":") && !rawHost.startsWith("[")
        ? "an IPv6 address goes in brackets"
        : "the host is not a DNS name or an IP address",
    );
  }
  const port = parsePort(authority.slice(colon + 1));
  if (port === undefined) return bad("the port must be a number from 1 to 65535");
  return { ok: true, target: { ...host, port } };
}

export type AbsoluteParse =
  | { ok: true; target: EgressTarget; path: string; hostHeader: string }
  | { ok: false; message: string };

/**
 * An absolute-form request target (`http://host[:port]/path?query`): the destination, the path to
 * send upstream as the client wrote it (fragment dropped), and the Host header it goes with. Only
 * `http:` is forwarded: an https destination is reached through CONNECT, so the gateway never
 * holds a TLS session of a run.
 */
export function parseAbsoluteTarget(raw: string): AbsoluteParse {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw);
  if (scheme === null) {
    return {
      ok: false,
      message:
        "gateway egress: this port is an HTTP proxy: send CONNECT host:port, or a request for an absolute http:// URL",
    };
  }
  if ((scheme[1] as string).toLowerCase() !== "http") {
    return {
      ok: false,
      message: `gateway egress: only http:// URLs are forwarded; reach ${(scheme[1] as string).toLowerCase()}:// destinations through CONNECT`,
    };
  }
  const rest = raw.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  if (authority.includes("@")) {
    return { ok: false, message: "gateway egress: a proxied URL must not carry a user or password" };
  }
  // Without a port the scheme's: http is 80.
  const withPort = /:[^\]]*$/.test(authority) ? authority : `${authority}:80`;
  const parsed = parseAuthority(withPort);
  if (!parsed.ok) return parsed;
  const afterAuthority = end < 0 ? "" : rest.slice(end);
  const hash = afterAuthority.indexOf("#");
  const pathAndQuery = hash < 0 ? afterAuthority : afterAuthority.slice(0, hash);
  const path = pathAndQuery.startsWith("/") ? pathAndQuery : `/${pathAndQuery}`;
  const { target } = parsed;
  return {
    ok: true,
    target,
    path,
    hostHeader: target.port === 80 ? target.host : `${target.host}:${target.port}`,
  };
}
