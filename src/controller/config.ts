/**
 * Controller settings from the environment (docs/controller.md#configuration), parsed strictly: a malformed value
 * stops the controller at startup with a message naming the variable and the value, instead of
 * silently running with a default the operator did not ask for.
 *
 * Pure: takes the environment as a plain record, so it is table-tested without touching
 * process.env.
 */
import {
  AGENT_BASE_URL_SETTINGS,
  AGENT_CLIS,
  CLI_VENDORS,
  type CliVendor,
  EXACT_VERSION,
  MODEL_API_FAMILIES,
  type ModelApiFamily,
} from "../core/cli/agent-clis.js";
import { branchNameProblem } from "../core/policy/branch-name.js";
import type { StationPolicy } from "../core/policy/station-policy.js";
import { NEVER_FIELDS, WIDENABLE_FIELDS } from "../core/policy/station-template/fields.js";
import { DEFAULT_MAX_HOLD_MS } from "../core/provider-limits/learner.js";
import { DEFAULT_MAX_OUTPUT_BYTES } from "../core/readback/output.js";
import { credentialKeyFromFile } from "../core/run-job/gateway-credential.js";
import { DEFAULT_GITHUB_API_URL, DEFAULT_GITHUB_SERVER_URL } from "../core/run-job/job.js";
import { DEFAULT_STUCK_POD_SECONDS } from "../core/run-job/stuck-pod.js";
import { DEFAULT_RECONCILE_ERROR_TRIES } from "../core/state-machine/contained.js";
import { AGENT_IMAGE } from "../version.js";

/** Image of the init container and courier when AGENT_IMAGE is unset: this release's agent image. */
export const DEFAULT_AGENT_IMAGE = AGENT_IMAGE;

/** Where components/admission mounts the webhook's serving certificate Secret. */
export const DEFAULT_ADMISSION_CERT_DIR = "/var/run/agent-admission/tls";
/** The webhook's Service (components/admission); its DNS name is what the certificate must name. */
export const DEFAULT_ADMISSION_SERVICE_NAME = "agent-controller-admission";

/** Timings the seed fixes; overridable only by code (tests), never by the environment. */
export interface ControllerTimings {
  /** Leader-election tick (~5 s). */
  leaseTickMs: number;
  /** A Lease not renewed for this long, by our own clock, may be taken over (15 s). */
  leaseDurationMs: number;
  /** Safety-net poll: a full LIST + reconcile of everything (~15 s). */
  pollIntervalMs: number;
  /** Server-side timeoutSeconds on each watch request. */
  watchTimeoutSeconds: number;
  /** Page size of every paginated LIST (the poll's metadata LISTs included). */
  listPageSize: number;
  /**
   * Page size of a LIST of whole Agents (the initial sync, a re-list after 410): each may carry a
   * status.output of MAX_OUTPUT_BYTES (256 KiB), so 100 bounds a page to about 25 MiB.
   */
  agentListPageSize: number;
  /** Exponential backoff of the watch loop on real errors. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_TIMINGS: ControllerTimings = {
  leaseTickMs: 5_000,
  leaseDurationMs: 15_000,
  pollIntervalMs: 15_000,
  watchTimeoutSeconds: 300,
  listPageSize: 500,
  agentListPageSize: 100,
  backoffBaseMs: 500,
  backoffMaxMs: 30_000,
};

export interface ControllerConfig {
  namespace: string;
  /** Lease holder identity. */
  podName: string;
  /**
   * POD_UID and POD_IP (downward API): the controller's own Pod, which its self-checks' Warning
   * Events are about (`kubectl describe pod` matches Events by uid), and its pod-network address.
   * Empty outside a cluster.
   */
  podUid: string;
  podIp: string;
  healthPort: number;
  /** Bind address of the health server (HEALTH_HOST, default all interfaces for kubelet probes). */
  healthHost: string;
  maxOutputBytes: number;
  agentImage: string;
  batchEnabled: boolean;
  batchPollSeconds: number;
  /** PROVIDER_LEARNING: learn provider limits from the runs' throttling and hold runs by them (docs/provider-limits.md). */
  providerLearning: boolean;
  /** PROVIDER_MAX_HOLD_SECONDS: the longest one run's report (a retry-after, its tokens) holds starts against its endpoint. */
  providerMaxHoldSeconds: number;
  /** STUCK_POD_SECONDS: a run pod waiting this long on a never-starts reason fails its Agent (docs/decisions.md D-22). */
  stuckPodSeconds: number;
  /** RECONCILE_ERROR_TRIES: reconciles of one Agent that throw in a row before it is contained (containedReconcile). */
  reconcileErrorTries: number;
  /** LOG_READ_CONCURRENCY: how many finished runs' pod logs are streamed at once (default 2). */
  logReadConcurrency: number;
  realtimeEnabled: boolean;
  realtimeApiToken: string;
  realtimeSigningKey: string;
  /** Port of the realtime prompt API (PROMPT_API_PORT, default 8082, the agent-controller-api Service's). */
  promptApiPort: number;
  /** ADMISSION_ENABLED: serve the validating admission webhook (components/admission; docs/admission.md). */
  admissionEnabled: boolean;
  /** ADMISSION_PORT: the webhook's HTTPS port (default 9443). */
  admissionPort: number;
  /** ADMISSION_CERT_DIR: directory holding tls.crt and tls.key (the mounted Secret). */
  admissionCertDir: string;
  /** ADMISSION_SERVICE_NAME: the webhook's Service; its certificate must name `<it>.<namespace>.svc`. */
  admissionServiceName: string;
  /** GITHUB_API_URL: the GitHub REST API the courier opens pull requests on (no trailing slash). */
  githubApiUrl: string;
  /** GITHUB_SERVER_URL: the git host the courier pushes to (no trailing slash). */
  githubServerUrl: string;
  /** DELIVERY_TARGET_REPOS: when set, the only owner/name repositories an Agent's targetRepo may name beside the declared ones. */
  deliveryTargetRepos: string[];
  /** DELIVERY_BRANCH_PREFIX: when set, the prefix every Agent's spec.branch must carry; "" narrows nothing. */
  deliveryBranchPrefix: string;
  /** RUN_POD_SERVICE_ACCOUNTS, RUN_POD_VOLUME_KINDS, RUN_POD_SECRETS, RUN_POD_FIELDS: the Station template policy's widening (docs/security.md). */
  runPodPolicy: StationPolicy;
  /** `<VENDOR>_CLI_VERSION` (AGENT_CLIS[vendor].versionSetting): the CLI version runs install; default the pinned one. */
  cliVersions: Record<CliVendor, string>;
  /** `AGENT_<API>_BASE_URL`: model API base URLs for the run pods' CLIs (docs/agent-clis.md); unset ones absent. */
  agentBaseUrls: Partial<Record<ModelApiFamily, string>>;
  /**
   * AGENT_GATEWAY_URL and the key AGENT_GATEWAY_CREDENTIAL_KEY_FILE holds (and AGENT_GATEWAY_EGRESS_URL, its egress proxy): the model gateway the
   * run pods' CLIs call with a per-run credential instead of a provider key (docs/gateway.md#run-credentials).
   * Absent: the gateway is off and runs get the definition's keys, as the seeds describe.
   */
  gateway?: { url: string; credentialKey: Buffer; egressProxyUrl?: string };
  timings: ControllerTimings;
}

/** Concurrent pod log reads (each streams one whole log through the meter). */
export const DEFAULT_LOG_READ_CONCURRENCY = 2;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

export interface ConfigSources {
  /** Namespace from the in-cluster service-account file; wins over NAMESPACE when present. */
  serviceAccountNamespace?: string;
  /** Identity to use when POD_NAME is unset (e.g. the host name when run from a laptop). */
  fallbackPodName?: string;
  /** Reads a file named by a setting (AGENT_GATEWAY_CREDENTIAL_KEY_FILE); throws when it cannot. */
  readFile?: (path: string) => Uint8Array;
}

function strictBool(name: string, raw: string | undefined): boolean {
  if (raw === undefined) return false;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new ConfigError(`${name} must be "true" or "false", got: "${raw}"`);
}

const NON_NEGATIVE_INT = /^[0-9]+$/;

function nonNegativeInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!NON_NEGATIVE_INT.test(raw) || !Number.isSafeInteger(n)) {
    throw new ConfigError(`${name} must be a non-negative integer, got: "${raw}"`);
  }
  return n;
}

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!NON_NEGATIVE_INT.test(raw) || !Number.isSafeInteger(n) || n < 1) {
    throw new ConfigError(`${name} must be a positive integer, got: "${raw}"`);
  }
  return n;
}

/** The most PROVIDER_MAX_HOLD_SECONDS may be: a day. */
export const MAX_PROVIDER_HOLD_SECONDS = 86_400;

function maxHoldSeconds(raw: string | undefined): number {
  const n = positiveInt("PROVIDER_MAX_HOLD_SECONDS", raw, DEFAULT_MAX_HOLD_MS / 1000);
  if (n > MAX_PROVIDER_HOLD_SECONDS) {
    throw new ConfigError(
      `PROVIDER_MAX_HOLD_SECONDS must be at most ${MAX_PROVIDER_HOLD_SECONDS} (a day), got: "${raw}"`,
    );
  }
  return n;
}

function port(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!NON_NEGATIVE_INT.test(raw) || n < 1 || n > 65535) {
    throw new ConfigError(`${name} must be a port number between 1 and 65535, got: "${raw}"`);
  }
  return n;
}

/**
 * `raw` as an http(s) URL without credentials, query, fragment or surrounding spaces; undefined
 * when it is not one (each caller words its own error).
 */
function plainHttpUrl(raw: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const plain =
    (url.protocol === "http:" || url.protocol === "https:") &&
    url.username === "" &&
    url.password === "" &&
    url.search === "" &&
    url.hash === "" &&
    raw.trim() === raw &&
    !/[?#]/.test(raw);
  return plain ? url : undefined;
}

/** An http(s) base URL without credentials, query or fragment; trailing slashes removed. */
function baseUrl(name: string, raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  if (!plainHttpUrl(raw)) {
    throw new ConfigError(
      `${name} must be an http or https URL without credentials, query or fragment, got: "${raw}"`,
    );
  }
  return raw.replace(/\/+$/, "");
}

function cliVersion(name: string, raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  if (!EXACT_VERSION.test(raw)) {
    throw new ConfigError(`${name} must be an exact npm version such as 1.2.3, got: "${raw}"`);
  }
  return raw;
}

function cliVersions(env: Readonly<Record<string, string | undefined>>): Record<CliVendor, string> {
  const out = {} as Record<CliVendor, string>;
  for (const vendor of CLI_VENDORS) {
    const { versionSetting, version } = AGENT_CLIS[vendor];
    out[vendor] = cliVersion(versionSetting, env[versionSetting], version);
  }
  return out;
}

function agentBaseUrls(
  env: Readonly<Record<string, string | undefined>>,
): Partial<Record<ModelApiFamily, string>> {
  const out: Partial<Record<ModelApiFamily, string>> = {};
  for (const api of MODEL_API_FAMILIES) {
    const { setting } = AGENT_BASE_URL_SETTINGS[api];
    if (env[setting] !== undefined) out[api] = baseUrl(setting, env[setting], "");
  }
  return out;
}

/**
 * AGENT_GATEWAY_URL: the gateway's origin (`http(s)://host[:port]`, a trailing slash dropped). No
 * path: the gateway serves the vendors' own paths at its root (docs/gateway.md#routes), and each
 * CLI's base URL is built from the origin.
 */
function gatewayOrigin(raw: string): string {
  const url = plainHttpUrl(raw);
  if (!url || (url.pathname !== "/" && url.pathname !== "")) {
    throw new ConfigError(
      `AGENT_GATEWAY_URL must be the gateway's http or https origin (scheme, host, optional port) without a path, credentials, query or fragment, got: "${raw}"`,
    );
  }
  return url.origin;
}

/**
 * AGENT_GATEWAY_EGRESS_URL: the gateway's egress proxy (`http://host:port`, docs/gateway.md#egress).
 * Plain http with the port named: the run pods' clients speak HTTP proxy (CONNECT) to it.
 */
function egressProxyOrigin(raw: string): string {
  const url = plainHttpUrl(raw);
  if (url?.protocol !== "http:" || url.port === "" || (url.pathname !== "/" && url.pathname !== "")) {
    throw new ConfigError(
      `AGENT_GATEWAY_EGRESS_URL must be the gateway's egress proxy as http://host:port (plain http, the port named, no path, credentials, query or fragment), got: "${raw}"`,
    );
  }
  return url.origin;
}

/** The model gateway: on with both AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE, off with neither. */
function gatewaySettings(
  env: Readonly<Record<string, string | undefined>>,
  readFile: ((path: string) => Uint8Array) | undefined,
): ControllerConfig["gateway"] {
  const urlRaw = env.AGENT_GATEWAY_URL;
  const keyFile = env.AGENT_GATEWAY_CREDENTIAL_KEY_FILE;
  const egressRaw = env.AGENT_GATEWAY_EGRESS_URL;
  if (urlRaw === undefined && keyFile === undefined) {
    if (egressRaw !== undefined) {
      throw new ConfigError(
        "AGENT_GATEWAY_EGRESS_URL needs the model gateway on (AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE): its proxy credentials are signed with the gateway's key",
      );
    }
    return undefined;
  }
  if (urlRaw === undefined || keyFile === undefined) {
    const missing = urlRaw === undefined ? "AGENT_GATEWAY_URL" : "AGENT_GATEWAY_CREDENTIAL_KEY_FILE";
    throw new ConfigError(
      `AGENT_GATEWAY_URL and AGENT_GATEWAY_CREDENTIAL_KEY_FILE must be set together (the model gateway's address and the key its run credentials are signed with); ${missing} is not set`,
    );
  }
  const url = gatewayOrigin(urlRaw);
  if (keyFile.trim() === "") throw new ConfigError("AGENT_GATEWAY_CREDENTIAL_KEY_FILE must not be empty");
  if (!readFile) throw new ConfigError(`AGENT_GATEWAY_CREDENTIAL_KEY_FILE=${keyFile}: no file reader given`);
  let bytes: Uint8Array;
  try {
    bytes = readFile(keyFile);
  } catch (err) {
    throw new ConfigError(
      `AGENT_GATEWAY_CREDENTIAL_KEY_FILE=${keyFile}: cannot read the gateway key (${(err as Error).message})`,
    );
  }
  const key = credentialKeyFromFile(bytes);
  if (typeof key === "string") throw new ConfigError(`AGENT_GATEWAY_CREDENTIAL_KEY_FILE=${keyFile}: ${key}`);
  if (egressRaw === undefined) return { url, credentialKey: key };
  return { url, credentialKey: key, egressProxyUrl: egressProxyOrigin(egressRaw) };
}

/** RFC 1123 label, the shape of a namespace name. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function nonEmpty(name: string, raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  if (raw.trim() === "") throw new ConfigError(`${name} must not be empty`);
  return raw;
}

/** Comma-separated owner/name repositories; each entry checked, so a typo stops the controller. */
function repoList(name: string, raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const repo = entry.trim();
    if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repo)) {
      throw new ConfigError(`${name} must be comma-separated owner/name repositories, got: "${repo}"`);
    }
    return repo;
  });
}

/** A branch prefix: the start of a valid git branch name (a trailing / allowed); unset or blank is "". */
function branchPrefix(name: string, raw: string | undefined): string {
  const prefix = (raw ?? "").trim();
  if (prefix === "") return "";
  const problem = branchNameProblem(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix);
  if (problem)
    throw new ConfigError(`${name} must start valid git branch names, got: "${prefix}" (it ${problem})`);
  return prefix;
}

/** The volume kinds of a pod spec (V1Volume's keys) a platform team may allow, hostPath and gitRepo never. */
const VOLUME_KINDS = new Set([
  "awsElasticBlockStore",
  "azureDisk",
  "azureFile",
  "cephfs",
  "cinder",
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "fc",
  "flexVolume",
  "flocker",
  "gcePersistentDisk",
  "glusterfs",
  "image",
  "iscsi",
  "nfs",
  "persistentVolumeClaim",
  "photonPersistentDisk",
  "portworxVolume",
  "projected",
  "quobyte",
  "rbd",
  "scaleIO",
  "secret",
  "storageos",
  "vsphereVolume",
]);

/** Comma-separated entries, each checked by `valid`; empty or unset is none. */
function list(name: string, raw: string | undefined, valid: (v: string) => boolean, what: string): string[] {
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((entry) => {
    const v = entry.trim();
    if (!valid(v)) throw new ConfigError(`${name} must be comma-separated ${what}, got: "${v}"`);
    return v;
  });
}

/** A field RUN_POD_FIELDS may name: one the policy refuses by name, never the host namespaces. */
function widenableField(v: string): boolean {
  return WIDENABLE_FIELDS.has(v) && !NEVER_FIELDS.has(v);
}

function runPodPolicy(env: Readonly<Record<string, string | undefined>>): StationPolicy {
  return {
    serviceAccounts: list(
      "RUN_POD_SERVICE_ACCOUNTS",
      env.RUN_POD_SERVICE_ACCOUNTS,
      (v) => DNS_SUBDOMAIN.test(v) && v.length <= 253,
      "ServiceAccount names",
    ),
    volumeKinds: list(
      "RUN_POD_VOLUME_KINDS",
      env.RUN_POD_VOLUME_KINDS,
      (v) => VOLUME_KINDS.has(v),
      "volume kinds as a pod spec spells them (e.g. secret,persistentVolumeClaim; never hostPath or gitRepo)",
    ),
    secrets: list(
      "RUN_POD_SECRETS",
      env.RUN_POD_SECRETS,
      (v) => DNS_SUBDOMAIN.test(v) && v.length <= 253,
      "Secret names",
    ),
    fields: list(
      "RUN_POD_FIELDS",
      env.RUN_POD_FIELDS,
      widenableField,
      `fields of the Station template allowlist's widening (${[...WIDENABLE_FIELDS].join(", ")})`,
    ),
  };
}

/**
 * Parses the controller settings. Unset variables take their defaults; a set-but-empty value is
 * treated as set (and rejected where empty makes no sense), because an empty value in a
 * Deployment is almost always a mistake worth surfacing.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  sources: ConfigSources = {},
  timings: Partial<ControllerTimings> = {},
): ControllerConfig {
  const ns = sources.serviceAccountNamespace?.trim() || nonEmpty("NAMESPACE", env.NAMESPACE, "ai-agents");
  if (!DNS_LABEL.test(ns) || ns.length > 63) {
    throw new ConfigError(`NAMESPACE must be a valid namespace name, got: "${ns}"`);
  }
  const podName = env.POD_NAME ?? sources.fallbackPodName;
  if (podName === undefined || podName.trim() === "") {
    throw new ConfigError("POD_NAME must be set (the Lease holder identity)");
  }
  const batchEnabled = strictBool("BATCH_ENABLED", env.BATCH_ENABLED);
  const batchPollSeconds = nonNegativeInt("BATCH_POLL_SECONDS", env.BATCH_POLL_SECONDS, 60);
  const realtimeEnabled = strictBool("REALTIME_ENABLED", env.REALTIME_ENABLED);
  const realtimeApiToken = env.REALTIME_API_TOKEN ?? "";
  const realtimeSigningKey = env.REALTIME_SIGNING_KEY ?? "";
  if (realtimeEnabled) {
    if (realtimeApiToken === "")
      throw new ConfigError("REALTIME_API_TOKEN must be set when REALTIME_ENABLED is true");
    if (realtimeSigningKey === "") {
      throw new ConfigError("REALTIME_SIGNING_KEY must be set when REALTIME_ENABLED is true");
    }
  }
  const gateway = gatewaySettings(env, sources.readFile);
  return {
    namespace: ns,
    podName,
    podUid: env.POD_UID ?? "",
    podIp: env.POD_IP ?? "",
    healthPort: port("HEALTH_PORT", env.HEALTH_PORT, 8081),
    healthHost: nonEmpty("HEALTH_HOST", env.HEALTH_HOST, "0.0.0.0"),
    promptApiPort: port("PROMPT_API_PORT", env.PROMPT_API_PORT, 8082),
    admissionEnabled: strictBool("ADMISSION_ENABLED", env.ADMISSION_ENABLED),
    admissionPort: port("ADMISSION_PORT", env.ADMISSION_PORT, 9443),
    admissionCertDir: nonEmpty("ADMISSION_CERT_DIR", env.ADMISSION_CERT_DIR, DEFAULT_ADMISSION_CERT_DIR),
    admissionServiceName: nonEmpty(
      "ADMISSION_SERVICE_NAME",
      env.ADMISSION_SERVICE_NAME,
      DEFAULT_ADMISSION_SERVICE_NAME,
    ),
    maxOutputBytes: positiveInt("MAX_OUTPUT_BYTES", env.MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_BYTES),
    agentImage: nonEmpty("AGENT_IMAGE", env.AGENT_IMAGE, DEFAULT_AGENT_IMAGE),
    batchEnabled,
    batchPollSeconds,
    providerLearning:
      env.PROVIDER_LEARNING === undefined ? true : strictBool("PROVIDER_LEARNING", env.PROVIDER_LEARNING),
    providerMaxHoldSeconds: maxHoldSeconds(env.PROVIDER_MAX_HOLD_SECONDS),
    stuckPodSeconds: positiveInt("STUCK_POD_SECONDS", env.STUCK_POD_SECONDS, DEFAULT_STUCK_POD_SECONDS),
    reconcileErrorTries: positiveInt(
      "RECONCILE_ERROR_TRIES",
      env.RECONCILE_ERROR_TRIES,
      DEFAULT_RECONCILE_ERROR_TRIES,
    ),
    logReadConcurrency: positiveInt(
      "LOG_READ_CONCURRENCY",
      env.LOG_READ_CONCURRENCY,
      DEFAULT_LOG_READ_CONCURRENCY,
    ),
    realtimeEnabled,
    realtimeApiToken,
    realtimeSigningKey,
    githubApiUrl: baseUrl("GITHUB_API_URL", env.GITHUB_API_URL, DEFAULT_GITHUB_API_URL),
    githubServerUrl: baseUrl("GITHUB_SERVER_URL", env.GITHUB_SERVER_URL, DEFAULT_GITHUB_SERVER_URL),
    cliVersions: cliVersions(env),
    agentBaseUrls: agentBaseUrls(env),
    ...(gateway ? { gateway } : {}),
    deliveryTargetRepos: repoList("DELIVERY_TARGET_REPOS", env.DELIVERY_TARGET_REPOS),
    deliveryBranchPrefix: branchPrefix("DELIVERY_BRANCH_PREFIX", env.DELIVERY_BRANCH_PREFIX),
    runPodPolicy: runPodPolicy(env),
    timings: { ...DEFAULT_TIMINGS, ...timings },
  };
}
