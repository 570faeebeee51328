/**
 * NetworkPolicies enforced on the real node (docs/real-node.md "NetworkPolicies"), opt-in with
 * `realNode: { networkPolicies: true }`: kube-router in firewall-only mode (no routing, no service
 * proxy) as a host process, built by scripts/cluster/build-network-policies.sh. It programs
 * iptables chains (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) and ipsets from the policies and
 * the node's pods.
 *
 * Why kube-router and not SIG Network's kube-network-policies: that engine queues packets with the
 * nftables `queue` expression, which this machine's kernel lacks (`nft add rule … queue num 100`:
 * "No such file or directory"; no loadable modules). kube-router v2.1.0 has reported security flaws
 * (the package list says so): it is test infrastructure here, never shipped or recommended.
 *
 * Its chains and sets are host state: those present before are recorded in <node dir>/teardown/
 * (real-node/firewall-record.ts) and scripts/cluster/node-teardown.sh removes what it added.
 */
import { execFileSync, spawn } from "node:child_process";
import { appendFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { generateClientCert } from "../certs.js";
import { onPath } from "../images.js";
import { groupAlive, type ProcessSpec, startProcess } from "../processes.js";
import { MACHINE, SERVICE_CIDR } from "./config.js";
import { kubeChains, recordFirewall } from "./firewall-record.js";

const BUILD = resolve(import.meta.dirname, "../../../scripts/cluster/build-network-policies.sh");

/** Builds the engine (a no-op once cached) and returns the binary's path. */
export async function ensureNetworkPolicyEngine(log: (m: string) => void): Promise<string> {
  return await new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [BUILD], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
      for (const line of c.toString().split("\n")) if (line.startsWith("[network-policies build]")) log(line);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const bin = out.trim().split("\n").at(-1) ?? "";
      if (code === 0 && bin) resolvePromise(bin);
      else reject(new Error(`${BUILD} failed (exit ${code}):\n${err.slice(-4000)}`));
    });
  });
}

export interface NetworkPolicyContext {
  planeDir: string;
  nodeDir: string;
  kubeconfigFor: (cert: string, key: string) => string;
  log: (m: string) => void;
}

/** Starts the engine for the node's pods and waits until its top-level chains are in place. */
export async function startNetworkPolicyEngine(c: NetworkPolicyContext): Promise<number> {
  if (!onPath("ipset"))
    throw new Error(
      "real node: NetworkPolicies need ipset (Debian package ipset; scripts/ensure-deps.sh installs it)",
    );
  const bin = await ensureNetworkPolicyEngine(c.log);
  const t = join(c.nodeDir, "teardown");
  await recordFirewall(t);
  // It reads pods, namespaces, NetworkPolicies, Services and the node cluster-wide: a test identity
  // with every permission (the product's RBAC is not what is under test here).
  const client = await generateClientCert(
    c.planeDir,
    "network-policies-client",
    "/O=system:masters/CN=kube-router",
  );
  const kubeconfig = join(c.nodeDir, "kube-router.kubeconfig");
  await writeFile(kubeconfig, c.kubeconfigFor(client.cert, client.key), { mode: 0o600 });
  const spec: ProcessSpec = {
    name: "kube-router",
    bin,
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--hostname-override=${MACHINE.nodeName}`,
      "--run-firewall=true",
      "--run-router=false",
      "--run-service-proxy=false",
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // No health or metrics listener: nothing opens a port on the machine.
      "--health-port=0",
      "--metrics-port=0",
      "--v=1",
    ],
    logFile: join(c.nodeDir, "kube-router.log"),
  };
  const proc = startProcess(spec);
  await appendFile(join(t, "pgids"), `${proc.pid}\n`);
  const deadline = Date.now() + 60_000;
  while (!kubeChains().includes("ip filter KUBE-ROUTER-FORWARD")) {
    if (!groupAlive(proc.pid))
      throw new Error(`real node: kube-router exited while starting; log: ${spec.logFile}`);
    if (Date.now() > deadline)
      throw new Error(
        `real node: kube-router made no KUBE-ROUTER-FORWARD chain in 60 s; log: ${spec.logFile}`,
      );
    await sleep(200);
  }
  c.log(`kube-router enforces NetworkPolicies on ${MACHINE.nodeName}`);
  return proc.pid;
}

/**
 * True when the engine has a firewall chain for each of these pod addresses: a test waits for it
 * before it expects a connection to be refused.
 */
export function engineFilters(podIPs: string[]): boolean {
  const rules = execFileSync("iptables-save", ["-t", "filter"], { encoding: "utf8" });
  return podIPs.every((ip) => rules.includes(`-d ${ip}/32`) && rules.includes(`-s ${ip}/32`));
}
