/**
 * How the run pod's own Node programs reach the network (docs/gateway.md#egress): through the
 * gateway's egress proxy when the container's env names one (HTTPS_PROXY / HTTP_PROXY, either
 * case, with NO_PROXY), directly otherwise. One choice for the init's downloads, the courier's
 * GitHub calls, sink delivery and the conversation save.
 *
 * Always npm undici's own `request`/`fetch` with this dispatcher: Node's built-in fetch bundles
 * another undici, into which a dispatcher of this one must not be mixed.
 */
import { Agent, type Dispatcher, EnvHttpProxyAgent, fetch as undiciFetch } from "undici";
import type { Env } from "./run-env.js";

export interface OutboundOptions {
  connectTimeoutMs?: number;
  /** Longest wait for the response head and between two body chunks. */
  idleTimeoutMs?: number;
  /** Extra trusted CA certificates (PEM) for the destination's TLS. */
  ca?: string;
}

const pick = (env: Env, lower: string, upper: string) => env[lower] || env[upper] || undefined;

/** The proxy settings the env names, lower case first (as curl and undici read them). */
export function proxySettings(env: Env): { httpProxy?: string; httpsProxy?: string; noProxy?: string } {
  const httpProxy = pick(env, "http_proxy", "HTTP_PROXY");
  const httpsProxy = pick(env, "https_proxy", "HTTPS_PROXY");
  const noProxy = pick(env, "no_proxy", "NO_PROXY");
  return {
    ...(httpProxy ? { httpProxy } : {}),
    ...(httpsProxy ? { httpsProxy } : {}),
    ...(noProxy ? { noProxy } : {}),
  };
}

/**
 * A dispatcher for outbound requests: an EnvHttpProxyAgent reading the proxy from `env` when it
 * names one (a destination in NO_PROXY is reached directly), a plain Agent otherwise. The timeouts
 * and CA apply to the destination both ways; through the proxy also to the proxy's connection.
 */
export function outboundDispatcher(options: OutboundOptions = {}, env: Env = process.env): Dispatcher {
  const timeouts = {
    ...(options.idleTimeoutMs !== undefined
      ? { headersTimeout: options.idleTimeoutMs, bodyTimeout: options.idleTimeoutMs }
      : {}),
  };
  const tls = {
    ...(options.connectTimeoutMs !== undefined ? { timeout: options.connectTimeoutMs } : {}),
    ...(options.ca !== undefined ? { ca: options.ca } : {}),
  };
  const proxy = proxySettings(env);
  if (proxy.httpProxy === undefined && proxy.httpsProxy === undefined) {
    return new Agent({ ...timeouts, connect: tls });
  }
  // Pass every setting explicitly, empty ones too, so undici never falls back to process.env.
  return new EnvHttpProxyAgent({
    httpProxy: proxy.httpProxy ?? "",
    httpsProxy: proxy.httpsProxy ?? proxy.httpProxy ?? "",
    noProxy: proxy.noProxy ?? "",
    ...timeouts,
    // Directly (NO_PROXY): `connect`; through the proxy: `proxyTls` to it, `requestTls` inside the tunnel.
    connect: tls,
    requestTls: tls,
    ...(options.connectTimeoutMs !== undefined ? { proxyTls: { timeout: options.connectTimeoutMs } } : {}),
  });
}

let shared: { key: string; dispatcher: Dispatcher } | undefined;

/**
 * The process's one dispatcher for short calls (sinks, the conversation save, GitHub), made from
 * process.env; made again only if the proxy variables changed (tests change them).
 */
export function runPodDispatcher(): Dispatcher {
  const key = JSON.stringify(proxySettings(process.env));
  if (shared?.key !== key) shared = { key, dispatcher: outboundDispatcher() };
  return shared.dispatcher;
}

/** `fetch` through runPodDispatcher, typed as the global one its callers are written against. */
export const runPodFetch: typeof fetch = ((input: string | URL, init?: RequestInit) =>
  undiciFetch(input, {
    ...(init as Parameters<typeof undiciFetch>[1]),
    dispatcher: runPodDispatcher(),
  })) as unknown as typeof fetch;
