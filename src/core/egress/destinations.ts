/**
 * Where a run pod's programs may go through the gateway's egress proxy (docs/gateway.md#egress):
 * destinations, `host:port` or `*.suffix:port`, computed per role (init, agent, courier) from
 * what the run's own spec already names, plus the Station's `spec.egress.allowHosts` for the
 * agent. The controller signs them into each role's egress credential (credential.ts); the
 * gateway allows exactly those. Pure.
 *
 * A destination's host is lower-cased, without a trailing dot; an IPv6 literal is in brackets in
 * its shortest form. `*.suffix` matches one or more labels below the suffix, never the suffix.
 */

const OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = new RegExp(`^${OCTET}(\\.${OCTET}){3}$`);
const isIPv4 = (text: string) => IPV4.test(text);

/** An IPv6 literal in its one shortest form (as the URL parser writes it), or undefined. */
function ipv6(text: string): string | undefined {
  if (!/^[0-9a-f:.]+$/.test(text) || !text.includes(":")) return undefined;
  try {
    return new URL(`http://[${text}]/`).hostname;
  } catch {
    return undefined;
  }
}

export type EgressRole = "init" | "agent" | "courier";

export const EGRESS_ROLES: readonly EgressRole[] = ["init", "agent", "courier"];

/** The port an `allowHosts` entry without one allows. */
export const DEFAULT_ALLOW_PORT = 443;
/** Where npm installs from unless the run's env names another registry. */
export const DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org/";

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/** The canonical host (lower-cased, IPv6 bracketed and shortened), or undefined when not a host. */
function canonicalHost(raw: string): string | undefined {
  let host = raw.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) {
    return ipv6(host.slice(1, -1));
  }
  if (host.includes(":")) return ipv6(host);
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host.length === 0 || host.length > 253) return undefined;
  const labels = host.split(".");
  if (!labels.every((l) => l.length <= 63 && LABEL.test(l))) return undefined;
  // A name whose last label is all digits is an IPv4 address or nothing (no TLD is numeric).
  if (/^[0-9]+$/.test(labels[labels.length - 1] as string) && !isIPv4(host)) return undefined;
  return host;
}

/** `*.suffix` with a suffix that is a name (not an address), or a host; canonical, or undefined. */
function canonicalPattern(raw: string): string | undefined {
  if (!raw.startsWith("*.")) return canonicalHost(raw);
  const suffix = canonicalHost(raw.slice(2));
  if (suffix === undefined || suffix.startsWith("[") || isIPv4(suffix)) return undefined;
  return `*.${suffix}`;
}

function canonicalPort(raw: string): number | undefined {
  if (!PORT.test(raw)) return undefined;
  const port = Number(raw);
  return port <= 65535 ? port : undefined;
}

/** `host` and `port` text of `host[:port]`, the host possibly an IPv6 literal in brackets. */
function splitHostPort(raw: string): { host: string; port?: string } {
  if (raw.startsWith("[")) {
    const close = raw.indexOf("]");
    if (close < 0) return { host: raw };
    const rest = raw.slice(close + 1);
    return rest.startsWith(":") ? { host: raw.slice(0, close + 1), port: rest.slice(1) } : { host: raw };
  }
  const colon = raw.lastIndexOf(":");
  if (colon < 0 || raw.indexOf(":") !== colon) return { host: raw };
  return { host: raw.slice(0, colon), port: raw.slice(colon + 1) };
}

/** A destination in its canonical form (`host:port`, `*.suffix:port`, `[v6]:port`), or undefined. */
export function parseDestination(text: string): string | undefined {
  const { host, port } = splitHostPort(text);
  if (port === undefined) return undefined;
  const h = canonicalPattern(host);
  const p = canonicalPort(port);
  return h !== undefined && p !== undefined ? `${h}:${p}` : undefined;
}

/**
 * A Station `spec.egress.allowHosts` entry (`host` or `*.suffix`, optionally `:port`) as a
 * destination; without a port it allows 443 only. Undefined when the entry is not one.
 */
export function parseAllowHost(entry: string): string | undefined {
  const { host, port } = splitHostPort(entry);
  if (port === undefined && host.includes(":") && !host.startsWith("[")) return undefined;
  return parseDestination(`${host}:${port ?? DEFAULT_ALLOW_PORT}`);
}

/** The first `allowHosts` entry that is not one, naming the field, or undefined when all are. */
export function allowHostsProblem(entries: readonly string[]): string | undefined {
  const i = entries.findIndex((e) => parseAllowHost(e) === undefined);
  if (i < 0) return undefined;
  return `spec.egress.allowHosts[${i}] ${JSON.stringify(entries[i])} is not a host or *.suffix with an optional :port`;
}

const SCHEME_PORTS: Readonly<Record<string, number>> = {
  "http:": 80,
  "https:": 443,
  "ssh:": 22,
  "git+ssh:": 22,
  "ssh+git:": 22,
  "git:": 9418,
};

/** git's scp-like form `[user@]host:path`: a colon before any slash, and no `://`. */
const SCP_LIKE = /^(?:[^@/:]+@)?(\[[^\]/]+\]|[^@/:[\]]+):(?!\/\/)/;

/**
 * The destination a URL the run fetches from or sends to connects to: http(s), ssh, git and
 * git's scp-like `git@host:owner/repo` (port 22); undefined for anything else (a file sink, a
 * local path, an unknown scheme), which the proxy has no part in.
 */
export function destinationOfUrl(url: string): string | undefined {
  const trimmed = url.trim();
  if (!trimmed.includes("://")) {
    const scp = SCP_LIKE.exec(trimmed);
    return scp ? parseDestination(`${scp[1]}:22`) : undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    return undefined;
  }
  // Own keys only: the scheme is the run author's text.
  const fallback = Object.hasOwn(SCHEME_PORTS, parsed.protocol) ? SCHEME_PORTS[parsed.protocol] : undefined;
  if (fallback === undefined || parsed.hostname === "") return undefined;
  return parseDestination(`${parsed.hostname}:${parsed.port || fallback}`);
}

/** What a run's destinations are computed from: the URLs its spec and the controller name. */
export interface EgressInput {
  /** The Agent's `spec.files[].url` (the init downloads them). */
  fileUrls: readonly string[];
  /** The definition's `resources.repos[].url` (the init clones them). */
  repoUrls: readonly string[];
  /** `resources.skills_source` (the init fetches the skills). */
  skillsSource?: string;
  /** `resources.conversation.source` (the init restores from it). */
  conversationSource?: string;
  /** The same source when the supervisor saves the run's conversation there (a pin is set). */
  conversationSave?: string;
  /** The http sinks' URLs (every role emits events). */
  sinkUrls: readonly string[];
  /** The definition's http and sse `resources.mcp_servers[].url` (the CLI connects to them). */
  mcpUrls: readonly string[];
  /** The Station's `spec.egress.allowHosts` (the agent container only). */
  allowHosts: readonly string[];
  /** For a CLI run: the registry the supervisor installs the CLI from when the image lacks it. */
  npmRegistry?: string;
  /** The courier's GitHub API and server (GITHUB_API_URL, GITHUB_SERVER_URL). */
  githubApiUrl: string;
  githubServerUrl: string;
}

/**
 * The destinations one role of the run may reach, sorted and without repeats
 * (docs/gateway.md#egress): the init its files, clones, skills, conversation and sinks; the
 * agent the Station's allowHosts, the recipe's MCP servers, the sinks, the conversation store it
 * saves to and the npm registry; the
 * courier the forge (git server and API) and the sinks. A URL that names no proxied
 * destination is skipped; an allowHosts entry that is not one is too (allowHostsProblem refuses
 * the run first).
 */
export function egressDestinations(role: EgressRole, input: EgressInput): string[] {
  const urls: (string | undefined)[] = [...input.sinkUrls];
  const out: (string | undefined)[] = [];
  switch (role) {
    case "init":
      urls.push(...input.fileUrls, ...input.repoUrls, input.skillsSource, input.conversationSource);
      break;
    case "agent":
      urls.push(...input.mcpUrls, input.conversationSave, input.npmRegistry);
      out.push(...input.allowHosts.map(parseAllowHost));
      break;
    case "courier":
      urls.push(input.githubApiUrl, input.githubServerUrl);
      break;
  }
  for (const u of urls) if (u) out.push(destinationOfUrl(u));
  return [...new Set(out.filter((d): d is string => d !== undefined))].sort();
}

/**
 * Whether a destination in the list allows `host:port`: the same host (compared canonically), or
 * a wildcard whose suffix the host ends in below at least one more label; the port equal.
 */
export function destinationAllowed(destinations: readonly string[], host: string, port: number): boolean {
  const h = canonicalHost(host);
  if (h === undefined || !Number.isInteger(port) || port < 1 || port > 65535) return false;
  for (const d of destinations) {
    const colon = d.lastIndexOf(":");
    if (Number(d.slice(colon + 1)) !== port) continue;
    const pattern = d.slice(0, colon);
    if (pattern.startsWith("*.")) {
      const suffix = pattern.slice(1);
      if (!h.startsWith("[") && h.endsWith(suffix) && h.length > suffix.length) return true;
    } else if (pattern === h) return true;
  }
  return false;
}
