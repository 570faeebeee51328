/**
 * The gateway's side of the integration tests on the local plane: components/gateway's Role in a
 * test's namespace, a client that acts as the gateway's ServiceAccount (impersonated, RBAC on), and
 * the gateway's servers in the test process on its cluster ports.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Job } from "@kubernetes/client-node";
import { Agent as UndiciAgent } from "undici";
import { parseAllDocuments } from "yaml";
import type { ClusterPorts } from "../../../src/gateway/cluster-ports.js";
import { parseCidr } from "../../../src/gateway/egress/address-policy.js";
import type { EgressRefusal } from "../../../src/gateway/egress/proxy-server.js";
import { egressAuthorizer } from "../../../src/gateway/egress-authorize.js";
import { egressRefusalRecorder } from "../../../src/gateway/egress-refusals.js";
import { GatewayMetrics } from "../../../src/gateway/metrics.js";
import { startGatewayServers } from "../../../src/gateway/server.js";
import { upstreamPools } from "../../../src/gateway/upstreams.js";
import type { GatewayVendor } from "../../../src/gateway/vendors.js";
import { KubeClient } from "../../../src/kube/client.js";
import type { Resource } from "../../../src/kube/resources.js";
import { REPO_ROOT } from "../../deploy/render.js";
import { kubeConfig } from "../../harness/context.js";

const ROLES: Resource = { group: "rbac.authorization.k8s.io", version: "v1", plural: "roles" };
const ROLE_BINDINGS: Resource = { group: "rbac.authorization.k8s.io", version: "v1", plural: "rolebindings" };

/** A client of the admin's kubeconfig that acts as `user` (the API server's impersonation). */
export async function impersonating(user: string): Promise<KubeClient> {
  const kc = kubeConfig();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the plane's kubeconfig has no cluster");
  const tls: Record<string, unknown> & { headers?: Record<string, string> } = {};
  await kc.applyToHTTPSOptions(tls as never);
  const connect: Record<string, unknown> = {};
  for (const k of ["ca", "cert", "key"] as const) if (tls[k] !== undefined) connect[k] = tls[k];
  return new KubeClient({
    server: cluster.server.replace(/\/$/, ""),
    dispatcher: new UndiciAgent({ connect }),
    headers: async () => ({ ...(tls.headers ?? {}), "Impersonate-User": user }),
    requestTimeoutMs: 10_000,
  });
}

/** components/gateway's Role and RoleBinding, moved into the test's namespace. */
export async function installGatewayRole(admin: KubeClient, namespace: string): Promise<void> {
  const docs = parseAllDocuments(
    readFileSync(join(REPO_ROOT, "deploy/components/gateway/rbac.yaml"), "utf8"),
  ).map(
    (d) =>
      d.toJS() as { kind: string; metadata: { namespace?: string }; subjects?: { namespace?: string }[] },
  );
  for (const doc of docs) {
    doc.metadata.namespace = namespace;
    for (const s of doc.subjects ?? []) s.namespace = namespace;
    await admin.create(doc.kind === "Role" ? ROLES : ROLE_BINDINGS, namespace, doc as never);
  }
}

/** A gateway process's servers in the test process, on cluster ports the test wires. */
export interface TestGateway {
  port: number;
  /** The egress proxy's port, when started with `egress`. */
  egressPort?: number;
  /** Closes the servers and the upstream pools (the ports are the test's to close). */
  close(): Promise<void>;
}

/**
 * The gateway's servers in front of the given upstreams, on `ports()`: called per request, so a
 * test may wire the ports after the gateway listens (the controller needs its address first).
 */
export async function startTestGateway(o: {
  ports: () => ClusterPorts;
  upstreams: Readonly<Record<GatewayVendor, string>>;
  credentialKey: Uint8Array;
  host: string;
  /** Starts the egress proxy too, letting runs reach these non-public ranges (GATEWAY_EGRESS_PRIVATE_CIDRS). */
  egress?: { privateCidrs: string[] };
}): Promise<TestGateway> {
  const quiet = { info() {}, warn() {}, error() {} };
  const pools = upstreamPools({ upstreams: o.upstreams, idleTimeoutMs: 600_000 });
  const metrics = new GatewayMetrics();
  const servers = await startGatewayServers(
    {
      upstreams: pools,
      credentialKey: o.credentialKey,
      runs: {
        runState: (run) => o.ports().runs.runState(run),
        stationOf: (run) => o.ports().runs.stationOf(run),
      },
      keys: { keyFor: (run, vendor) => o.ports().keys.keyFor(run, vendor) },
      usage: {
        started: (run, vendor) => o.ports().usage.started(run, vendor),
        record: (entry) => o.ports().usage.record(entry),
      },
      budget: { admit: (run, vendor, station, worst) => o.ports().budget.admit(run, vendor, station, worst) },
      warnings: { warn: (...args) => o.ports().warnings.warn(...args) },
      metrics,
      logger: quiet,
      maxRequestBytes: 32 << 20,
      idleTimeoutMs: 600_000,
    },
    {
      host: o.host,
      port: 0,
      metricsPort: 0,
      ...(o.egress
        ? {
            egress: {
              port: 0,
              deps: {
                authorize: egressAuthorizer({
                  credentialKey: o.credentialKey,
                  runs: { runState: (run) => o.ports().runs.runState(run) },
                }),
                onRefused: (r: EgressRefusal) => egressRefusalRecorder(o.ports().egressRefusals)(r),
                privateCidrs: o.egress.privateCidrs.map((c) => {
                  const cidr = parseCidr(c);
                  if (!cidr) throw new Error(`not a CIDR: ${c}`);
                  return cidr;
                }),
                metrics,
                logger: quiet,
                idleTimeoutMs: 600_000,
              },
            },
          }
        : {}),
    },
  );
  return {
    port: servers.port,
    ...(servers.egressPort !== undefined ? { egressPort: servers.egressPort } : {}),
    close: async () => {
      await servers.close(100);
      await Promise.all(Object.values(pools).map((p) => p.destroy()));
    },
  };
}

/** The value of a variable of a Job's `agent` container (the run credential, for instance). */
export function agentEnvValue(job: V1Job | undefined, name: string): string {
  return (
    job?.spec?.template.spec?.containers.find((c) => c.name === "agent")?.env?.find((e) => e.name === name)
      ?.value ?? ""
  );
}
