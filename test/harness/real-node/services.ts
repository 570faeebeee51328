/**
 * ClusterIP Services on the real node (docs/real-node.md "Services"), opt-in with
 * `realNode: { services: true }`: kube-proxy of the plane's release in iptables mode, and the API
 * server reachable from pods through the `kubernetes` Service.
 *
 * The API server listens on 127.0.0.1 only (binding it wider would expose it beyond the machine, and
 * the bridge does not exist yet when it starts): a TCP relay in the harness process listens on the
 * bridge address with the API server's port, and the `kubernetes` Service's EndpointSlice (the API
 * server's endpoint reconciler is off) names that address. The relay lives and dies with the plane.
 *
 * kube-proxy's firewall rules are host state: the tables and KUBE-* chains present before are recorded
 * in <node dir>/teardown/ and scripts/cluster/node-teardown.sh removes what kube-proxy added.
 */
import { appendFile, writeFile } from "node:fs/promises";
import { createConnection, createServer, type Server } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { HarnessApi } from "../api.js";
import { generateClientCert } from "../certs.js";
import { freePorts } from "../ports.js";
import { groupAlive, type ProcessSpec, startProcess } from "../processes.js";
import { MACHINE } from "./config.js";
import { recordFirewall } from "./firewall-record.js";

/** The kube-proxy configuration: iptables mode, no host tunables touched, nothing but the bridge. */
export function kubeProxyConfig(o: { kubeconfig: string; healthzPort: number; metricsPort: number }): string {
  return [
    "apiVersion: kubeproxy.config.k8s.io/v1alpha1",
    "kind: KubeProxyConfiguration",
    "clientConnection:",
    `  kubeconfig: ${o.kubeconfig}`,
    `hostnameOverride: ${MACHINE.nodeName}`,
    "mode: iptables",
    // Traffic from outside the pod range is masqueraded (the host calling a pod through a Service).
    `clusterCIDR: ${MACHINE.subnet}`,
    `healthzBindAddress: 127.0.0.1:${o.healthzPort}`,
    `metricsBindAddress: 127.0.0.1:${o.metricsPort}`,
    // NodePorts only on the bridge address: nothing opens on the machine's real interfaces.
    `nodePortAddresses: ["${MACHINE.gateway}/32"]`,
    // Zeros: kube-proxy leaves the host's conntrack sysctls as they are.
    "conntrack:",
    "  maxPerCore: 0",
    "  min: 0",
    "  tcpEstablishedTimeout: 0s",
    "  tcpCloseWaitTimeout: 0s",
    "iptables:",
    // true would set net.ipv4.conf.all.route_localnet.
    "  localhostNodePorts: false",
    "  syncPeriod: 30s",
    "  minSyncPeriod: 0s",
    "",
  ].join("\n");
}

export interface NodeServices {
  relay: Server;
  kubeProxyPid: number;
}

export interface ServicesContext {
  planeDir: string;
  nodeDir: string;
  binDir: string;
  caFile: string;
  apiServerPort: number;
  api: HarnessApi;
  kubeconfigFor: (cert: string, key: string) => string;
  log: (m: string) => void;
}

/** Starts the relay and kube-proxy, publishes the API server's endpoint, and waits until kube-proxy is healthy. */
export async function startNodeServices(c: ServicesContext): Promise<NodeServices> {
  const t = join(c.nodeDir, "teardown");
  await recordFirewall(t);

  const relay = await startRelay(MACHINE.gateway, c.apiServerPort, c.apiServerPort);
  await publishApiServerEndpoint(c.api, c.apiServerPort);

  const client = await generateClientCert(c.planeDir, "kube-proxy-client", "/CN=system:kube-proxy");
  const kubeconfig = join(c.nodeDir, "kube-proxy.kubeconfig");
  await writeFile(kubeconfig, c.kubeconfigFor(client.cert, client.key), { mode: 0o600 });
  const [healthzPort = 0, metricsPort = 0] = await freePorts(2);
  const config = join(c.nodeDir, "kube-proxy.yaml");
  await writeFile(config, kubeProxyConfig({ kubeconfig, healthzPort, metricsPort }));
  const spec: ProcessSpec = {
    name: "kube-proxy",
    bin: join(c.binDir, "kube-proxy"),
    args: [`--config=${config}`, "--v=1"],
    logFile: join(c.nodeDir, "kube-proxy.log"),
  };
  const proc = startProcess(spec);
  await appendFile(join(t, "pgids"), `${proc.pid}\n`);
  const deadline = Date.now() + 60_000;
  let last = "";
  for (;;) {
    if (!groupAlive(proc.pid))
      throw new Error(`real node: kube-proxy exited while starting; log: ${spec.logFile}`);
    try {
      const res = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
      last = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
      if (res.ok) break;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`real node: kube-proxy not healthy in 60 s (${last}); log: ${spec.logFile}`);
    await sleep(200);
  }
  c.log(
    `kube-proxy serves ClusterIP Services on ${MACHINE.nodeName}; the API server at ${MACHINE.gateway}:${c.apiServerPort}`,
  );
  return { relay, kubeProxyPid: proc.pid };
}

/** A plain TCP relay (TLS passes through: the API server's certificate names 10.96.0.1 and kubernetes.default.svc). */
function startRelay(host: string, port: number, targetPort: number): Promise<Server> {
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: "127.0.0.1", port: targetPort });
    inbound.pipe(outbound).pipe(inbound);
    const close = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on("error", close);
    outbound.on("error", close);
    inbound.on("close", close);
    outbound.on("close", close);
  });
  server.unref();
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** The `kubernetes` Service's endpoint, as the API server's endpoint reconciler would write it. */
async function publishApiServerEndpoint(api: HarnessApi, port: number): Promise<void> {
  const slice = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: {
        "kubernetes.io/service-name": "kubernetes",
        "endpointslice.kubernetes.io/managed-by": "harness.test.example",
      },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: [MACHINE.gateway], conditions: { ready: true } }],
    ports: [{ name: "https", port, protocol: "TCP" }],
  };
  const path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
  await api.ok("POST", path, slice);
}
