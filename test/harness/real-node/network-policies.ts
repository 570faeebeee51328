/**
 * NetworkPolicies enforced on the real node (docs/real-node.md "NetworkPolicies"), opt-in with
 * `realNode: { networkPolicies: true }`: the controller of sigs.k8s.io/kube-network-policies (SIG
 * Network's reference engine: an nftables table that queues the new connections of pods selected by
 * a policy to an nfqueue, where the policies decide) as a host process, built by
 * scripts/cluster/build-network-policies.sh.
 *
 * Its nftables table is host state: the tables present before are recorded in <node dir>/teardown/
 * (the same record kube-proxy's uses) and scripts/cluster/node-teardown.sh deletes any table that
 * was not there. The engine removes its own table when it stops; the teardown covers a kill.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { generateClientCert } from "../certs.js";
import { groupAlive, type ProcessSpec, startProcess } from "../processes.js";
import { MACHINE } from "./config.js";

const BUILD = resolve(import.meta.dirname, "../../../scripts/cluster/build-network-policies.sh");

/** The engine's nftables table (inet family) and the set of the node's pod addresses it filters. */
export const NETWORK_POLICY_TABLE = "kube-network-policies";
const FILTERED_PODS_SET = "podips-v4";

/** `nft list tables` lines ("table ip nat"). */
export function nftTables(): string[] {
  return execFileSync("nft", ["list", "tables"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.startsWith("table "));
}

/** Writes <teardown>/nft-tables unless kube-proxy's start already did (the machine before either). */
export async function recordNftTables(teardownDir: string): Promise<void> {
  const file = join(teardownDir, "nft-tables");
  if (!existsSync(file)) await writeFile(file, `${nftTables().join("\n")}\n`);
}

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

/** Starts the engine for the node's pods and waits until its table is in place. */
export async function startNetworkPolicyEngine(c: NetworkPolicyContext): Promise<number> {
  const bin = await ensureNetworkPolicyEngine(c.log);
  const t = join(c.nodeDir, "teardown");
  await recordNftTables(t);
  if (nftTables().includes(`table inet ${NETWORK_POLICY_TABLE}`))
    throw new Error(
      `real node: an nftables table inet ${NETWORK_POLICY_TABLE} exists already (another engine on this machine?); \`nft delete table inet ${NETWORK_POLICY_TABLE}\` removes it`,
    );
  // It reads pods, namespaces and NetworkPolicies cluster-wide and writes Events: a test identity
  // with every permission (the product's RBAC is not what is under test here).
  const client = await generateClientCert(
    c.planeDir,
    "network-policies-client",
    "/O=system:masters/CN=kube-network-policies",
  );
  const kubeconfig = join(c.nodeDir, "network-policies.kubeconfig");
  await writeFile(kubeconfig, c.kubeconfigFor(client.cert, client.key), { mode: 0o600 });
  const spec: ProcessSpec = {
    name: "kube-network-policies",
    bin,
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--hostname-override=${MACHINE.nodeName}`,
      `--nftables-table=${NETWORK_POLICY_TABLE}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--v=2",
    ],
    logFile: join(c.nodeDir, "network-policies.log"),
  };
  const proc = startProcess(spec);
  await appendFile(join(t, "pgids"), `${proc.pid}\n`);
  const deadline = Date.now() + 60_000;
  while (!nftTables().includes(`table inet ${NETWORK_POLICY_TABLE}`)) {
    if (!groupAlive(proc.pid))
      throw new Error(`real node: kube-network-policies exited while starting; log: ${spec.logFile}`);
    if (Date.now() > deadline)
      throw new Error(
        `real node: kube-network-policies made no nftables table in 60 s; log: ${spec.logFile}`,
      );
    await sleep(200);
  }
  c.log(`kube-network-policies enforces NetworkPolicies on ${MACHINE.nodeName}`);
  return proc.pid;
}

/**
 * The node's pod addresses the engine filters now (those selected by some NetworkPolicy): a test
 * waits for a pod to be in it before it expects a connection to be dropped.
 */
export function filteredPodAddresses(): string[] {
  try {
    const out = execFileSync("nft", ["list", "set", "inet", NETWORK_POLICY_TABLE, FILTERED_PODS_SET], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const elements = /elements = \{([^}]*)\}/.exec(out)?.[1] ?? "";
    return elements
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== "");
  } catch {
    return [];
  }
}
