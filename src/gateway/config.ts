/**
 * The gateway's settings from the environment (docs/gateway.md#configuration), parsed strictly: a
 * malformed value stops the process at start with a message naming the variable, instead of a
 * default nobody asked for. Each vendor's upstream is an origin fixed here, the only hosts the
 * gateway ever calls. Pure: the environment comes in as a plain record.
 */
import { type Cidr, parseCidr } from "./egress/address-policy.js";
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
  /** Where runs and their keys are looked up (`GATEWAY_MODE`). */
  runs: RunSource;
  /** The egress listener's port (`GATEWAY_EGRESS_PORT`); undefined when it is off. */
  egressPort: number | undefined;
  /** Non-public ranges the egress listener may connect to (`GATEWAY_EGRESS_PRIVATE_CIDRS`). */
  egressPrivateCidrs: Cidr[];
}

/**
 * `cluster` (the component's): each credential's Agent read from the API server, each run's key
 * the agent-secrets entry its definition names. `standalone` (a gateway outside a cluster, e.g.
 * `npm run gateway` in front of a local test): one key per vendor from a directory, and every
 * credential whose signature holds counts as a running Agent.
 */
export type RunSource =
  | {
      mode: "cluster";
      /** The namespace the gateway serves: its Role's, and the one whose agent-secrets is mounted. */
      namespace: string;
      /** agent-secrets mounted whole (one file per key). */
      agentSecretsDir: string;
    }
  | {
      mode: "standalone";
      /** A directory holding one file per vendor key (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY). */
      providerKeysDir: string;
    };

export const GATEWAY_MODES = ["cluster", "standalone"] as const;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

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

/** The egress listener's port (docs/gateway.md#egress-listener): 3128 unless set; `0` or `off` turns it off. */
export const DEFAULT_EGRESS_PORT = 3128;

function egressPort(env: Env): number | undefined {
  const raw = env.GATEWAY_EGRESS_PORT;
  if (raw === "0" || raw === "off") return undefined;
  return integer(env, "GATEWAY_EGRESS_PORT", DEFAULT_EGRESS_PORT, 1, 65535);
}

/** `GATEWAY_EGRESS_PRIVATE_CIDRS`: a comma-separated list of `address/prefix`, IPv4 or IPv6. */
export function egressPrivateCidrs(env: Env): Cidr[] {
  const raw = env.GATEWAY_EGRESS_PRIVATE_CIDRS;
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const cidr = parseCidr(entry.trim());
    if (cidr === undefined) {
      throw new GatewayConfigError(
        `GATEWAY_EGRESS_PRIVATE_CIDRS: ${JSON.stringify(entry.trim())} is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)`,
      );
    }
    return cidr;
  });
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

function required(env: Env, name: string, why = ""): string {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") throw new GatewayConfigError(`${name} is not set${why}`);
  return raw;
}

function unset(env: Env, name: string, mode: string): void {
  const raw = env[name];
  if (raw !== undefined && raw !== "") {
    throw new GatewayConfigError(`${name} is set, but GATEWAY_MODE=${mode} does not read it`);
  }
}

/** GATEWAY_MODE and the variables of that mode; the other mode's variables must be unset. */
export function parseRunSource(env: Env): RunSource {
  const mode = env.GATEWAY_MODE;
  if (mode === undefined || mode === "") {
    throw new GatewayConfigError(
      "GATEWAY_MODE is not set: cluster or standalone (docs/gateway.md#configuration)",
    );
  }
  if (mode === "cluster") {
    unset(env, "GATEWAY_PROVIDER_KEYS_DIR", mode);
    const namespace = required(env, "GATEWAY_NAMESPACE", " (GATEWAY_MODE=cluster)");
    if (!DNS_LABEL.test(namespace)) {
      throw new GatewayConfigError(`GATEWAY_NAMESPACE=${JSON.stringify(namespace)}: not a namespace name`);
    }
    return {
      mode,
      namespace,
      agentSecretsDir: required(env, "GATEWAY_AGENT_SECRETS_DIR", " (GATEWAY_MODE=cluster)"),
    };
  }
  if (mode === "standalone") {
    unset(env, "GATEWAY_NAMESPACE", mode);
    unset(env, "GATEWAY_AGENT_SECRETS_DIR", mode);
    return {
      mode,
      providerKeysDir: required(env, "GATEWAY_PROVIDER_KEYS_DIR", " (GATEWAY_MODE=standalone)"),
    };
  }
  throw new GatewayConfigError(`GATEWAY_MODE=${JSON.stringify(mode)}: must be cluster or standalone`);
}

export function parseGatewayConfig(env: Env): GatewayConfig {
  const upstreams = {} as Record<GatewayVendor, string>;
  for (const vendor of Object.keys(DEFAULT_UPSTREAMS) as GatewayVendor[]) {
    const name = UPSTREAM_VARIABLES[vendor];
    const raw = env[name];
    upstreams[vendor] =
      raw === undefined || raw === "" ? DEFAULT_UPSTREAMS[vendor] : upstreamOrigin(name, raw);
  }
  const port = integer(env, "GATEWAY_PORT", 8080, 1, 65535);
  const metricsPort = integer(env, "GATEWAY_METRICS_PORT", 9090, 1, 65535);
  const egress = egressPort(env);
  if (egress !== undefined && (egress === port || egress === metricsPort)) {
    throw new GatewayConfigError(
      `GATEWAY_EGRESS_PORT=${egress}: already the ${egress === port ? "GATEWAY_PORT" : "GATEWAY_METRICS_PORT"}`,
    );
  }
  return {
    host: env.GATEWAY_HOST === undefined || env.GATEWAY_HOST === "" ? "0.0.0.0" : env.GATEWAY_HOST,
    port,
    metricsPort,
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
    runs: parseRunSource(env),
    egressPort: egress,
    egressPrivateCidrs: egressPrivateCidrs(env),
  };
}
