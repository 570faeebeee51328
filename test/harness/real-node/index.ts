/**
 * A real Kubernetes node beside a local plane's kwok nodes (docs/real-node.md): the kubelet built by
 * scripts/cluster/build.sh, containerd + runc + the CNI plugins from Debian's packages, the pause
 * image and the project's images (npm run build:images) imported. One per machine at a time (the
 * bridge, its subnet and the cgroup root are fixed); a plane opts in with
 * `startControlPlane({ realNode: … })`. Its pods opt in with REAL_NODE_SCHEDULING.
 *
 * Everything it changes on the machine is recorded in <node dir>/teardown/ before it is changed, and
 * scripts/cluster/node-teardown.sh puts it back: on stop, from the plane's exit hook, and from the
 * plane's watchdog when the test process died.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { appendFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { HarnessApi } from "../api.js";
import { generateClientCert, generateServingCert } from "../certs.js";
import { type BuiltImage, buildImages, type ImageKey, imagesProblem, onPath } from "../images.js";
import { freePorts } from "../ports.js";
import { groupAlive, type ProcessSpec, processAlive, startProcess } from "../processes.js";
import {
  cniConfig,
  containerdConfig,
  FOREIGN_PATHS,
  kubeletConfig,
  MACHINE,
  type NodePaths,
  REAL_NODE_LABEL,
  TOUCHED_SYSCTLS,
} from "./config.js";
import { startNetworkPolicyEngine } from "./network-policies.js";
import { type NodeServices, startNodeServices } from "./services.js";

export { MACHINE, REAL_NODE_LABEL } from "./config.js";

const run = promisify(execFile);
const TEARDOWN = resolve(import.meta.dirname, "../../../scripts/cluster/node-teardown.sh");

/** Spread into a pod spec (or a Station's pod template) to run it on the real node. */
export const REAL_NODE_SCHEDULING = {
  nodeSelector: { [REAL_NODE_LABEL]: "true" },
  tolerations: [{ key: REAL_NODE_LABEL, operator: "Equal", value: "true", effect: "NoSchedule" }],
} as const;

export interface RealNodeOptions {
  /** The project's images to import besides pause (default: the agent image). */
  images?: Exclude<ImageKey, "pause">[];
  /** How long to wait for another plane's real node to stop (default 10 min). */
  lockTimeoutMs?: number;
  /**
   * ClusterIP Services for the node's pods: kube-proxy, the API server reachable through the
   * `kubernetes` Service (real-node/services.ts). The plane then also runs the EndpointSlice and
   * root-CA publisher controllers and the ServiceAccount admission plugin, as a cluster does.
   */
  services?: boolean;
  /**
   * NetworkPolicies enforced for the node's pods by kube-network-policies, a host process
   * (real-node/network-policies.ts). Without it policies are stored but nothing enforces them.
   */
  networkPolicies?: boolean;
}

/** What the plane's state file records about its real node. */
export interface RealNodeState {
  name: string;
  dir: string;
  ip: string;
  kubeletPort: number;
  containerdSocket: string;
  specs: { containerd: ProcessSpec; kubelet: ProcessSpec };
  pids: { containerd: number; kubelet: number };
  /** The images imported, by key. */
  images: Partial<Record<ImageKey, BuiltImage>>;
}

/** "" when this machine can run a real node, else why not (its tests skip with it). */
export function realNodeProblem(binDir?: string): string {
  if (process.getuid?.() !== 0) return "a real node needs root (cgroups, mounts, a network bridge)";
  const missing = ["containerd", "ctr", "runc", "ip"].filter((tool) => !onPath(tool));
  for (const plugin of ["bridge", "host-local", "loopback"]) {
    if (!existsSync(`/usr/lib/cni/${plugin}`)) missing.push(`CNI plugin ${plugin}`);
  }
  if (missing.length > 0)
    return `not installed: ${missing.join(", ")} (Debian packages containerd, runc, containernetworking-plugins; scripts/ensure-deps.sh installs them as root)`;
  if (binDir !== undefined && !existsSync(join(binDir, "kubelet")))
    return `no kubelet in ${binDir} (scripts/cluster/build.sh builds it)`;
  if (!existsSync("/sys/fs/cgroup")) return "no cgroup filesystem at /sys/fs/cgroup";
  return imagesProblem();
}

/** The machine's image cache's sibling for the node's containerd root (images stay imported across runs). */
function containerdRootDir(): string {
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  return join(cache, "ai-agent-subsystem", "real-node", "containerd");
}

export interface PlaneForNode {
  /** The plane's directory: ca.crt/ca.key are there; the node works in <dir>/real-node. */
  planeDir: string;
  server: string;
  caFile: string;
  /** Where the kubelet binary is (scripts/cluster/build.sh's output). */
  binDir: string;
  api: HarnessApi;
  log: (message: string) => void;
}

export class RealNode {
  constructor(
    readonly state: RealNodeState,
    private readonly paths: NodePaths,
  ) {}

  /** Set when the node serves ClusterIP Services (RealNodeOptions.services). */
  services?: NodeServices;

  /** Takes the node off the machine and restores what it changed (idempotent). */
  async stop(): Promise<void> {
    this.services?.relay.close();
    await run("bash", [TEARDOWN, this.state.dir], { timeout: 120_000 });
  }

  /** Imports one more image (e.g. a Station image a test built) into the node's containerd. */
  async importImage(image: BuiltImage, log: (m: string) => void = () => {}): Promise<void> {
    await importImage(this.paths, image, log);
  }

  /** The same, synchronously: for a process `exit` hook. */
  stopNow(): void {
    this.services?.relay.close();
    spawnSync("bash", [TEARDOWN, this.state.dir], { stdio: "ignore", timeout: 60_000 });
  }
}

async function sh(cmd: string, args: string[]): Promise<string> {
  try {
    return (await run(cmd, args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(" ")}: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** Takes the machine-wide lock; a lock whose owner died is cleaned up after (its node torn down). */
async function acquireLock(dir: string, timeoutMs: number, log: (m: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let said = false;
  for (;;) {
    try {
      writeFileSync(MACHINE.lockFile, `${process.pid}\n${dir}\n`, { flag: "wx" });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const [pid = "", other = ""] = readFileSync(MACHINE.lockFile, "utf8").split("\n");
    if (Number(pid) > 0 && processAlive(Number(pid))) {
      if (Date.now() > deadline)
        throw new Error(
          `real node: another plane's real node is running on this machine (pid ${pid}, ${other}); one at a time`,
        );
      if (!said) log(`another plane's real node is running (pid ${pid}); waiting for it`);
      said = true;
      await sleep(1_000);
      continue;
    }
    // Its owner died and its watchdog did not finish: take that node off first.
    log(`cleaning up a real node left by pid ${pid} (${other})`);
    if (other !== "") spawnSync("bash", [TEARDOWN, other], { stdio: "ignore", timeout: 120_000 });
    if (existsSync(MACHINE.lockFile) && readFileSync(MACHINE.lockFile, "utf8").startsWith(`${pid}\n`))
      await rm(MACHINE.lockFile, { force: true });
  }
}

function readSysctl(key: string): string {
  return readFileSync(`/proc/sys/${key.replaceAll(".", "/")}`, "utf8").trim();
}

/** The cgroup hierarchies to make the kubelet's cgroupRoot in (cgroup v1: one per controller mount). */
function cgroupHierarchies(): string[] {
  if (existsSync("/sys/fs/cgroup/cgroup.controllers")) return ["/sys/fs/cgroup"]; // v2
  const mounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n");
  return mounts
    .map((line) => line.split(" "))
    .filter((f) => f.includes("cgroup") && f[f.indexOf("-") + 1] === "cgroup")
    .map((f) => f[4] ?? "")
    .filter((p) => p.startsWith("/sys/fs/cgroup/"));
}

async function makeCgroupRoot(): Promise<void> {
  for (const hierarchy of cgroupHierarchies()) {
    const dir = join(hierarchy, MACHINE.cgroupRoot);
    await mkdir(dir, { recursive: true });
    // A new v1 cpuset starts with no CPUs and no memory nodes: nothing could join it.
    if (existsSync(join(dir, "cpuset.cpus"))) {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) {
        if (readFileSync(join(dir, f), "utf8").trim() === "")
          writeFileSync(join(dir, f), readFileSync(join(hierarchy, f), "utf8"));
      }
    }
  }
}

/** Starts containerd and the kubelet, imports the images, and waits until the node is Ready. */
export async function startRealNode(plane: PlaneForNode, options: RealNodeOptions = {}): Promise<RealNode> {
  const problem = realNodeProblem(plane.binDir);
  if (problem !== "") throw new Error(`real node: ${problem}`);
  const started = Date.now();
  const dir = join(plane.planeDir, "real-node");
  const t = join(dir, "teardown");
  const p: NodePaths = {
    dir,
    containerdRoot: containerdRootDir(),
    containerdState: join(dir, "containerd-state"),
    containerdSocket: join(dir, "containerd.sock"),
    cniConfDir: join(dir, "cni", "net.d"),
    cniDataDir: join(dir, "cni", "ipam"),
    kubeletRoot: join(dir, "kubelet"),
    podLogs: join(dir, "pod-logs"),
    volumePluginDir: join(dir, "volume-plugins"),
  };
  for (const d of [
    t,
    p.containerdRoot,
    p.containerdState,
    p.cniConfDir,
    p.cniDataDir,
    p.kubeletRoot,
    p.podLogs,
  ])
    await mkdir(d, { recursive: true });

  // The images first: a cold build takes minutes, and needs no lock of the node's.
  const keys = options.images ?? ["agent"];
  const manifest = await buildImages(["pause", ...keys], plane.log);

  await acquireLock(dir, options.lockTimeoutMs ?? 600_000, plane.log);
  const node = new RealNode(
    {
      name: MACHINE.nodeName,
      dir,
      ip: MACHINE.gateway,
      kubeletPort: 0,
      containerdSocket: p.containerdSocket,
      specs: {} as RealNodeState["specs"],
      pids: { containerd: 0, kubelet: 0 },
      images: {},
    },
    p,
  );
  try {
    // Recorded before anything is changed, so a crash at any point can be undone.
    await writeFile(join(t, "lock"), `${MACHINE.lockFile}\n`);
    await writeFile(join(t, "sysctls"), TOUCHED_SYSCTLS.map((k) => `${k} ${readSysctl(k)}\n`).join(""));
    await writeFile(join(t, "created-paths"), FOREIGN_PATHS.filter((f) => !existsSync(f)).join("\n"));
    await writeFile(join(t, "cgroup-root"), `${MACHINE.cgroupRoot}\n`);
    await writeFile(join(t, "socket"), `${p.containerdSocket}\n`);
    await writeFile(join(t, "pgids"), "");

    // The kubelet refuses a loopback node IP, and there is no dummy interface here: the CNI bridge is
    // made first, its gateway address becomes the node's IP (pods get addresses on it; nothing leaves
    // the machine).
    if ((await sh("ip", ["-o", "link"])).includes(` ${MACHINE.bridge}:`))
      throw new Error(
        `real node: a bridge ${MACHINE.bridge} exists already (left by a node that was not torn down?); \`ip link del ${MACHINE.bridge}\` removes it`,
      );
    const routes = await sh("ip", ["-o", "route"]);
    if (routes.includes(MACHINE.gateway.replace(/\d+$/, "")))
      throw new Error(
        `real node: the subnet ${MACHINE.subnet} is already routed on this machine:\n${routes}`,
      );
    await writeFile(join(t, "bridge"), `${MACHINE.bridge}\n`);
    try {
      await sh("ip", ["link", "add", MACHINE.bridge, "type", "bridge"]);
    } catch (err) {
      throw new Error(`real node: this kernel cannot make a network bridge: ${(err as Error).message}`);
    }
    // Before any port joins it, so the pods only ever see this MAC for the gateway (MACHINE.bridgeMac).
    await sh("ip", ["link", "set", MACHINE.bridge, "address", MACHINE.bridgeMac]);
    await sh("ip", ["addr", "add", `${MACHINE.gateway}/24`, "dev", MACHINE.bridge]);
    await sh("ip", ["link", "set", MACHINE.bridge, "up"]);
    await makeCgroupRoot();

    const [kubeletPort = 0] = await freePorts(1);
    node.state.kubeletPort = kubeletPort;
    const serving = await generateServingCert(plane.planeDir, "real-node-kubelet", [MACHINE.gateway]);
    const client = await generateClientCert(
      plane.planeDir,
      "real-node-client",
      `/O=system:nodes/CN=system:node:${MACHINE.nodeName}`,
    );
    const kubeconfig = join(dir, "kubelet.kubeconfig");
    await writeFile(kubeconfig, nodeKubeconfig(plane.server, plane.caFile, client.cert, client.key), {
      mode: 0o600,
    });
    await writeFile(join(dir, "containerd.toml"), containerdConfig(p));
    await writeFile(
      join(p.cniConfDir, "10-ai-agent-node.conflist"),
      cniConfig(p, options.services === true, options.networkPolicies === true),
    );
    const kubeletConfigFile = join(dir, "kubelet.yaml");
    await writeFile(
      kubeletConfigFile,
      kubeletConfig(p, {
        port: kubeletPort,
        caFile: plane.caFile,
        tlsCertFile: serving.cert,
        tlsPrivateKeyFile: serving.key,
      }),
    );

    node.state.specs = {
      containerd: {
        name: "containerd",
        bin: "containerd",
        args: ["--config", join(dir, "containerd.toml"), "--log-level", "warn"],
        logFile: join(dir, "containerd.log"),
      },
      kubelet: {
        name: "kubelet",
        bin: join(plane.binDir, "kubelet"),
        args: [
          `--config=${kubeletConfigFile}`,
          `--kubeconfig=${kubeconfig}`,
          `--root-dir=${p.kubeletRoot}`,
          `--hostname-override=${MACHINE.nodeName}`,
          `--node-ip=${MACHINE.gateway}`,
          `--node-labels=${REAL_NODE_LABEL}=true`,
          `--register-with-taints=${REAL_NODE_LABEL}=true:NoSchedule`,
          "--v=1",
        ],
        logFile: join(dir, "kubelet.log"),
      },
    };
    await startNodeProcess(node, "containerd");
    await waitUntil("containerd serves its socket", 30_000, node, async () => {
      await sh("ctr", ["--address", p.containerdSocket, "version"]);
      return true;
    });
    for (const key of ["pause", ...keys] as ImageKey[]) {
      const image = manifest[key];
      if (image === undefined) throw new Error(`real node: scripts/images/build.sh built no ${key} image`);
      await importImage(p, image, plane.log);
      node.state.images[key] = image;
    }

    await startKubelet(node);
    await waitUntil(`node ${MACHINE.nodeName} Ready`, 60_000, node, async () => {
      const res = await plane.api.request("GET", `/api/v1/nodes/${MACHINE.nodeName}`);
      if (res.status !== 200) return `HTTP ${res.status}`;
      const conditions =
        (res.json as { status?: { conditions?: { type: string; status: string; message?: string }[] } })
          .status?.conditions ?? [];
      const ready = conditions.find((c) => c.type === "Ready");
      return ready?.status === "True" ? true : `Ready=${ready?.status}: ${ready?.message ?? ""}`;
    });
    await probePod(plane.api, node);
    if (options.services) {
      node.services = await startNodeServices({
        planeDir: plane.planeDir,
        nodeDir: dir,
        binDir: plane.binDir,
        caFile: plane.caFile,
        apiServerPort: Number(new URL(plane.server).port),
        api: plane.api,
        kubeconfigFor: (cert, key) => nodeKubeconfig(plane.server, plane.caFile, cert, key),
        log: plane.log,
      });
    }
    if (options.networkPolicies) {
      await startNetworkPolicyEngine({
        planeDir: plane.planeDir,
        nodeDir: dir,
        kubeconfigFor: (cert, key) => nodeKubeconfig(plane.server, plane.caFile, cert, key),
        log: plane.log,
      });
    }
    plane.log(`real node ${MACHINE.nodeName} Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return node;
  } catch (err) {
    await node.stop().catch(() => {});
    throw err;
  }
}

/**
 * One pod through the whole node (CRI sandbox from the pause image, CNI address, runc container,
 * status, graceful deletion confirmed by the kubelet), so a broken node fails here, naming the pod's
 * state, and not as a test's timeout.
 */
async function probePod(api: HarnessApi, node: RealNode): Promise<void> {
  const ns = "real-node-probe";
  const create = await api.request("POST", "/api/v1/namespaces", { metadata: { name: ns } });
  if (create.status !== 201 && create.status !== 409)
    throw new Error(`real node probe: namespace: HTTP ${create.status}`);
  // With the ServiceAccount admission plugin on (RealNodeOptions.services), a pod needs it first.
  const deadline = Date.now() + 30_000;
  while ((await api.request("GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status !== 200) {
    if (Date.now() > deadline) throw new Error(`real node probe: no ServiceAccount default in ${ns}`);
    await sleep(100);
  }
  const path = `/api/v1/namespaces/${ns}/pods/probe`;
  await api.ok("POST", `/api/v1/namespaces/${ns}/pods`, {
    metadata: { name: "probe" },
    spec: {
      ...REAL_NODE_SCHEDULING,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: "pause", image: MACHINE.pauseImage, imagePullPolicy: "Never" }],
    },
  });
  type Pod = {
    status?: { phase?: string; podIP?: string; containerStatuses?: unknown[]; conditions?: unknown[] };
  };
  await waitUntil("the probe pod Running with a pod IP", 60_000, node, async () => {
    const pod = (await api.ok("GET", path)) as Pod;
    return pod.status?.phase === "Running" && pod.status.podIP
      ? true
      : JSON.stringify({ phase: pod.status?.phase, containers: pod.status?.containerStatuses });
  });
  await api.ok("DELETE", path, { gracePeriodSeconds: 1 });
  await waitUntil("the kubelet confirms the probe pod's deletion", 60_000, node, async () => {
    const res = await api.request("GET", path);
    return res.status === 404 ? true : `HTTP ${res.status}`;
  });
}

async function startNodeProcess(
  node: Pick<RealNode, "state">,
  name: "containerd" | "kubelet",
): Promise<void> {
  const proc = startProcess(node.state.specs[name]);
  node.state.pids[name] = proc.pid;
  await appendFile(join(node.state.dir, "teardown", "pgids"), `${proc.pid}\n`);
}

/** Restarts the kubelet alone (same flags); its pods keep running in containerd meanwhile. */
export async function restartKubelet(node: Pick<RealNode, "state">, downMs = 0): Promise<void> {
  const pid = node.state.pids.kubelet;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {}
  while (groupAlive(pid)) await sleep(50);
  if (downMs > 0) await sleep(downMs);
  await startKubelet(node);
}

/**
 * Starts the kubelet once containerd's CRI serves. `ctr version` answers before the CRI plugin has
 * initialised, and a kubelet started then exits at once with `validate CRI v1 runtime API …:
 * server is not initialized yet` (seen with the machine under load): such an exit is retried; any
 * other exit is the kubelet's error.
 */
async function startKubelet(node: Pick<RealNode, "state">): Promise<void> {
  const logFile = node.state.specs.kubelet.logFile;
  for (let attempt = 1; ; attempt++) {
    const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
    await startNodeProcess(node, "kubelet");
    const pid = node.state.pids.kubelet;
    const until = Date.now() + 3000;
    while (Date.now() < until && groupAlive(pid)) await sleep(100);
    if (groupAlive(pid)) return;
    const said = readFileSync(logFile).subarray(logStart).toString("utf8");
    if (!said.includes("server is not initialized yet") || attempt >= 30)
      throw nodeError(node, "kubelet", "exited while starting");
    await sleep(300);
  }
}

async function waitUntil(
  what: string,
  timeoutMs: number,
  node: RealNode,
  check: () => Promise<true | string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let detail = "";
  while (Date.now() < deadline) {
    for (const name of ["containerd", "kubelet"] as const) {
      const pid = node.state.pids[name];
      if (pid > 0 && !groupAlive(pid)) throw nodeError(node, name, "exited while starting");
    }
    try {
      const result = await check();
      if (result === true) return;
      detail = result;
    } catch (err) {
      detail = (err as Error).message;
    }
    await sleep(200);
  }
  const culprit = node.state.pids.kubelet > 0 ? "kubelet" : "containerd";
  throw nodeError(node, culprit, `not ready after ${timeoutMs / 1000} s: ${what} (last check: ${detail})`);
}

function nodeError(node: Pick<RealNode, "state">, name: "containerd" | "kubelet", what: string): Error {
  const log = node.state.specs[name]?.logFile ?? "";
  let tail = "(no log)";
  try {
    const lines = readFileSync(log, "utf8").trimEnd().split("\n");
    // klog's error and fatal lines first: a kubelet that exits prints its cause among its flags.
    const errors = lines.filter((l) => /^[EF]\d{4} /.test(l)).slice(-5);
    tail = [...errors, ...(errors.length > 0 ? ["---"] : []), ...lines.slice(-15)].join("\n");
  } catch {}
  return new Error(`real node: ${name} ${what}; log: ${log}\n--- last lines ---\n${tail}`);
}

/**
 * `ctr images import` of a docker archive into the CRI's namespace, skipped when this image id was
 * imported before (containerd's root is kept across runs: a ~200-500 MB import takes 10-15 s).
 */
async function importImage(p: NodePaths, image: BuiltImage, log: (m: string) => void): Promise<void> {
  const marker = join(p.containerdRoot, "ai-agent-imported.json");
  let imported: Record<string, string> = {};
  try {
    imported = JSON.parse(await readFile(marker, "utf8")) as Record<string, string>;
  } catch {}
  const ctr = ["--address", p.containerdSocket, "--namespace", "k8s.io"];
  const present = (await sh("ctr", [...ctr, "images", "ls", "--quiet"])).split("\n");
  if (imported[image.name] === image.id && present.includes(image.name)) return;
  const started = Date.now();
  if (!existsSync(image.archive) || statSync(image.archive).size === 0)
    throw new Error(
      `real node: the archive of ${image.name} is missing (${image.archive}); run npm run build:images`,
    );
  // Unpacked into the overlayfs snapshotter the CRI uses, so the first container starts at once.
  await sh("ctr", [...ctr, "images", "import", "--snapshotter", "overlayfs", image.archive]);
  imported[image.name] = image.id;
  await writeFile(marker, `${JSON.stringify(imported, null, 2)}\n`);
  log(`imported ${image.name} into the real node in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

function nodeKubeconfig(server: string, caFile: string, cert: string, key: string): string {
  const b64 = (f: string) => readFileSync(f).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caFile)}`,
    "users:",
    "- name: node",
    "  user:",
    `    client-certificate-data: ${b64(cert)}`,
    `    client-key-data: ${b64(key)}`,
    "contexts:",
    "- name: local",
    "  context: {cluster: local, user: node}",
    "current-context: local",
    "",
  ].join("\n");
}
