/**
 * What crosses the gateway in headers (docs/gateway.md#what-reaches-upstream). Works on the raw
 * header list (`IncomingMessage.rawHeaders`: every occurrence, as sent) rather than Node's joined
 * object, which keeps only the first of repeated `Authorization` headers and would hide the rest.
 *
 * Upstream gets the client's headers minus every client credential, every forwarding or
 * hop-by-hop header and `Host`, plus `accept-encoding: identity` and the vendor's real key. The
 * client gets the upstream's headers minus hop-by-hop ones and cookies.
 */
import { type GatewayVendor, upstreamAuthHeader } from "./vendors.js";

/** Client credentials of any vendor, and cookies: never forwarded. */
const CREDENTIAL_HEADERS = new Set([
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "x-goog-api-key",
  "api-key",
  "cookie",
]);

/** Hop-by-hop headers (RFC 9110), headers undici sets itself, and who-forwarded-what headers. */
const NOT_FORWARDED = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "expect",
  "accept-encoding",
  "forwarded",
  "via",
  "x-real-ip",
]);

/** Upstream answer headers the client does not get. */
const NOT_RETURNED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "set-cookie",
]);

function pairs(raw: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] as string, raw[i + 1] as string]);
  return out;
}

/** Header names a `Connection` header lists are hop-by-hop for that message too. */
function connectionListed(raw: Array<[string, string]>): Set<string> {
  const listed = new Set<string>();
  for (const [name, value] of raw) {
    if (name.toLowerCase() !== "connection") continue;
    for (const token of value.split(",")) listed.add(token.trim().toLowerCase());
  }
  return listed;
}

export function isStrippedRequestHeader(lowerName: string): boolean {
  return (
    CREDENTIAL_HEADERS.has(lowerName) ||
    NOT_FORWARDED.has(lowerName) ||
    lowerName.startsWith("x-forwarded-") ||
    lowerName.startsWith("proxy-")
  );
}

/**
 * The headers sent upstream, as undici's flat `[name, value, …]` list: the client's own (e.g.
 * `anthropic-version`, `anthropic-beta`, `openai-beta`, `user-agent`) minus what
 * `isStrippedRequestHeader` names and what the client's `Connection` header lists, then
 * `accept-encoding: identity` (the tee parses plain bytes) and the vendor's key.
 */
export function upstreamRequestHeaders(
  rawHeaders: readonly string[],
  vendor: GatewayVendor,
  key: string,
): string[] {
  const raw = pairs(rawHeaders);
  const listed = connectionListed(raw);
  const out: string[] = [];
  for (const [name, value] of raw) {
    const lower = name.toLowerCase();
    if (isStrippedRequestHeader(lower) || listed.has(lower)) continue;
    out.push(name, value);
  }
  const [authName, authValue] = upstreamAuthHeader(vendor, key);
  out.push("accept-encoding", "identity", authName, authValue);
  return out;
}

/** The upstream answer's headers for the client: all but hop-by-hop ones and cookies. */
export function downstreamResponseHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const listed = new Set<string>();
  const connection = headers.connection;
  for (const v of Array.isArray(connection) ? connection : connection ? [connection] : []) {
    for (const token of v.split(",")) listed.add(token.trim().toLowerCase());
  }
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || NOT_RETURNED.has(lower) || listed.has(lower)) continue;
    out[lower] = value;
  }
  return out;
}

/**
 * Every distinct non-empty credential the client presented, wherever a CLI puts it: `x-api-key`
 * (claude, opencode's Anthropic SDK), `Authorization: Bearer` (codex, `ANTHROPIC_AUTH_TOKEN`),
 * `x-goog-api-key` (gemini) and the `key` query parameter, each occurrence counted.
 */
export function presentedCredentials(rawHeaders: readonly string[], rawQuery: string): string[] {
  const found = new Set<string>();
  for (const [name, value] of pairs(rawHeaders)) {
    const lower = name.toLowerCase();
    if (lower === "authorization") {
      const bearer = /^\s*Bearer\s+(.*)$/i.exec(value);
      const token = (bearer ? bearer[1] : value)?.trim();
      if (token) found.add(token);
    } else if (lower === "x-api-key" || lower === "x-goog-api-key") {
      const token = value.trim();
      if (token) found.add(token);
    }
  }
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    if (name.toLowerCase() === "key" && value.trim()) found.add(value.trim());
  }
  return [...found];
}
