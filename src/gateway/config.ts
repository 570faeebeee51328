/**
 * The gateway's settings from the environment (docs/gateway.md#configuration), parsed strictly: a
 * malformed value stops the process at start with a message naming the variable, instead of a
 * default nobody asked for. Each vendor's upstream is an origin fixed here, the only hosts the
 * gateway ever calls. Pure: the environment comes in as a plain record.
 */
import type { GatewayVendor } from "./vendors.js";

export class GatewayConfigError extends Error {}

export interface GatewayConfig {
  host: string;
  port: number;
  metricsPort: number;
  /** Origin (`scheme://host[:port]`) of each vendor's API. */
  upstreams: Readonly<Record<GatewayVendor, string>>;
  /** The longest silence on a request or an answer, never a total duration. */
  idleTimeoutMs: number;
  maxRequestBytes: number;
  /** A file holding the key the run credentials are signed with (a mounted Secret key). */
  credentialKeyFile: string;
  /** A directory holding one file per vendor key (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY). */
  providerKeysDir: string;
}

export const DEFAULT_UPSTREAMS: Readonly<Record<GatewayVendor, string>> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com",
  gemini: "https://generativelanguage.googleapis.com",
};

export const UPSTREAM_VARIABLES: Readonly<Record<GatewayVendor, string>> = {
  anthropic: "GATEWAY_ANTHROPIC_UPSTREAM",
  openai: "GATEWAY_OPENAI_UPSTREAM",
  gemini: "GATEWAY_GEMINI_UPSTREAM",
};

/** Long thinking pauses and slow tool turns stay well inside it (docs/gateway.md#timeouts). */
export const MIN_IDLE_TIMEOUT_MS = 600_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 900_000;
/** Anthropic's documented Messages request limit is 32 MB; the others' are smaller. */
export const DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024;
const MIN_REQUEST_BYTES = 1024;
const MAX_REQUEST_BYTES = 256 * 1024 * 1024;

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new GatewayConfigError(`${name}=${JSON.stringify(raw)}: must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

/** The origin an upstream variable names: http(s), a host, an optional port, nothing else. */
export function upstreamOrigin(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new GatewayConfigError(`${name}=${JSON.stringify(raw)}: not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new GatewayConfigError(`${name}=${JSON.stringify(raw)}: must be an http:// or https:// URL`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new GatewayConfigError(`${name}=${JSON.stringify(raw)}: must not hold a user or password`);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "") {
    throw new GatewayConfigError(
      `${name}=${JSON.stringify(raw)}: must be an origin only (scheme, host, port), without a path, query or fragment`,
    );
  }
  return url.origin;
}

function required(env: Env, name: string): string {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") throw new GatewayConfigError(`${name} is not set`);
  return raw;
}

export function parseGatewayConfig(env: Env): GatewayConfig {
  const upstreams = {} as Record<GatewayVendor, string>;
  for (const vendor of Object.keys(DEFAULT_UPSTREAMS) as GatewayVendor[]) {
    const name = UPSTREAM_VARIABLES[vendor];
    const raw = env[name];
    upstreams[vendor] =
      raw === undefined || raw === "" ? DEFAULT_UPSTREAMS[vendor] : upstreamOrigin(name, raw);
  }
  return {
    host: env.GATEWAY_HOST === undefined || env.GATEWAY_HOST === "" ? "0.0.0.0" : env.GATEWAY_HOST,
    port: integer(env, "GATEWAY_PORT", 8080, 1, 65535),
    metricsPort: integer(env, "GATEWAY_METRICS_PORT", 9090, 1, 65535),
    upstreams,
    idleTimeoutMs: integer(
      env,
      "GATEWAY_IDLE_TIMEOUT_MS",
      DEFAULT_IDLE_TIMEOUT_MS,
      MIN_IDLE_TIMEOUT_MS,
      86_400_000,
    ),
    maxRequestBytes: integer(
      env,
      "GATEWAY_MAX_REQUEST_BYTES",
      DEFAULT_MAX_REQUEST_BYTES,
      MIN_REQUEST_BYTES,
      MAX_REQUEST_BYTES,
    ),
    credentialKeyFile: required(env, "GATEWAY_CREDENTIAL_KEY_FILE"),
    providerKeysDir: required(env, "GATEWAY_PROVIDER_KEYS_DIR"),
  };
}
