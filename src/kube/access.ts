/**
 * How the controller reaches the API server, without @kubernetes/client-node: loading that
 * package costs about 26 MiB of heap, 70 MiB of RSS and 0.9 s of CPU at every start (it loads the
 * whole generated API), a fifth of the controller's memory limit (docs/decisions.md D-52). The common cases are
 * read here, in kubectl's order:
 *
 * 1. $KUBECONFIG (one file), else ~/.kube/config: the current context's cluster (server,
 *    certificate-authority[-data], insecure-skip-tls-verify, tls-server-name) and user
 *    (client-certificate[-data] + client-key[-data], token, tokenFile, username + password);
 *    relative file paths are relative to the kubeconfig's directory.
 * 2. Otherwise in a pod: KUBERNETES_SERVICE_HOST/PORT, the service account's CA and token.
 *
 * Anything else (exec and auth-provider plugins, proxy-url, impersonation, several $KUBECONFIG
 * files) returns undefined, and the caller falls back to @kubernetes/client-node's KubeConfig.
 * Token files are read again every minute, as bound service-account tokens are rotated on disk.
 */
import { existsSync, readFileSync } from "node:fs";
import { isIPv6 } from "node:net";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { parse } from "yaml";

export interface KubeAccess {
  /** The API server's URL, without a trailing slash. */
  server: string;
  /** TLS options for undici's connect (ca, cert, key, servername, rejectUnauthorized). */
  tls: Record<string, unknown>;
  /** Auth headers; called per request (cached for a minute by the caller). */
  headers: () => Record<string, string>;
  /** Where it came from, for the log line. */
  source: string;
}

export interface AccessSources {
  env?: Readonly<Record<string, string | undefined>>;
  home?: string;
  /** The service account directory (default /var/run/secrets/kubernetes.io/serviceaccount). */
  serviceAccountDir?: string;
}

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
const TOKEN_REREAD_MS = 60_000;

/** A token read from a file, re-read once a minute. */
function tokenFile(path: string): () => string {
  let cached: { at: number; token: string } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > TOKEN_REREAD_MS) {
      cached = { at: Date.now(), token: readFileSync(path, "utf8").trim() };
    }
    return cached.token;
  };
}

export function loadKubeAccess(s: AccessSources = {}): KubeAccess | undefined {
  const env = s.env ?? process.env;
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(delimiter).filter((f) => f);
    return files.length === 1 ? fromKubeconfig(files[0] as string) : undefined;
  }
  const home = s.home ?? homedir();
  const personal = join(home, ".kube", "config");
  if (home && existsSync(personal)) return fromKubeconfig(personal);
  const sa = s.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (existsSync(join(sa, "token"))) return inCluster(env, sa);
  return undefined;
}

function inCluster(env: Readonly<Record<string, string | undefined>>, sa: string): KubeAccess | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
  const token = tokenFile(join(sa, "token"));
  return {
    server: `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    tls: { ca: readFileSync(join(sa, "ca.crt")) },
    headers: () => ({ authorization: `Bearer ${token()}` }),
    source: "in-cluster service account",
  };
}

type Named<T> = { name?: string } & T;
interface ClusterEntry {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  [k: string]: unknown;
}
interface UserEntry {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  [k: string]: unknown;
}
interface Kubeconfig {
  "current-context"?: string;
  clusters?: Named<{ cluster?: ClusterEntry }>[];
  users?: Named<{ user?: UserEntry }>[];
  contexts?: Named<{ context?: { cluster?: string; user?: string } }>[];
}

const CLUSTER_KEYS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "extensions",
]);
const USER_KEYS = new Set([
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
  "token",
  "tokenFile",
  "username",
  "password",
  "extensions",
]);

function fromKubeconfig(file: string): KubeAccess | undefined {
  const kc = parse(readFileSync(file, "utf8")) as Kubeconfig | null;
  const ctxName = kc?.["current-context"];
  const ctx = kc?.contexts?.find((c) => c.name === ctxName)?.context;
  const cluster = kc?.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = ctx?.user ? (kc?.users?.find((u) => u.name === ctx.user)?.user ?? {}) : {};
  if (!cluster?.server) return undefined;
  // Plugins, proxies and impersonation: leave them to @kubernetes/client-node.
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k))) return undefined;
  if (Object.keys(user).some((k) => !USER_KEYS.has(k))) return undefined;
  const dir = dirname(file);
  const bytes = (data: string | undefined, path: string | undefined): Buffer | undefined => {
    if (data) return Buffer.from(data, "base64");
    if (path) return readFileSync(isAbsolute(path) ? path : join(dir, path));
    return undefined;
  };
  const tls: Record<string, unknown> = {};
  const ca = bytes(cluster["certificate-authority-data"], cluster["certificate-authority"]);
  if (ca) tls.ca = ca;
  const cert = bytes(user["client-certificate-data"], user["client-certificate"]);
  const key = bytes(user["client-key-data"], user["client-key"]);
  if (cert) tls.cert = cert;
  if (key) tls.key = key;
  if (cluster["tls-server-name"]) tls.servername = cluster["tls-server-name"];
  if (cluster["insecure-skip-tls-verify"]) tls.rejectUnauthorized = false;
  let headers: () => Record<string, string> = () => ({});
  if (user.token) {
    const value = `Bearer ${user.token}`;
    headers = () => ({ authorization: value });
  } else if (user.tokenFile) {
    const token = tokenFile(isAbsolute(user.tokenFile) ? user.tokenFile : join(dir, user.tokenFile));
    headers = () => ({ authorization: `Bearer ${token()}` });
  } else if (user.username !== undefined && user.password !== undefined) {
    const value = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString("base64")}`;
    headers = () => ({ authorization: value });
  }
  return { server: cluster.server.replace(/\/$/, ""), tls, headers, source: file };
}
