/**
 * A real, local Kubernetes control plane for tests and `npm run dev`: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler and kwok (fake nodes) as plain processes on 127.0.0.1,
 * each in its own process group, on free ports, in a fresh directory with fresh certificates.
 * See docs/control-plane.md and test/harness/README.md.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { HarnessApi } from "./api.js";
import { generateCerts, writeAdminKubeconfig } from "./certs.js";
import { prepareRunnerImages } from "./pod-runner/images.js";
import { PodRunner, RUNNER_SCHEDULING } from "./pod-runner/index.js";
import { PodScripter } from "./pod-scripter.js";
import { freePorts, portIsFree } from "./ports.js";
import { groupAlive, type ProcessSpec, startProcess, stopGroup } from "./processes.js";
import { type RealNode, type RealNodeOptions, type RealNodeState, startRealNode } from "./real-node/index.js";

const runFile = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(HERE, "../..");

export type ComponentName = "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kwok";
/** Start order; stop runs in reverse. */
export const COMPONENTS: readonly ComponentName[] = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
];

/** Everything another process needs to use or manipulate a running plane (written as JSON). */
export interface PlaneState {
  dir: string;
  etcdDataDir: string;
  kubeconfig: string;
  server: string;
  caFile: string;
  adminCertFile: string;
  adminKeyFile: string;
  ports: { etcdClient: number; etcdPeer: number; apiServer: number; kwok: number };
  specs: Record<ComponentName, ProcessSpec>;
  pids: Record<ComponentName, number>;
  nodes: string[];
  /** The pod runner's node (pods opt in with RUNNER_SCHEDULING) and its error log. */
  runner?: { node: string; logFile: string };
  /** The real node, when the plane was started with one (pods opt in with REAL_NODE_SCHEDULING). */
  realNode?: RealNodeState;
}

export interface ControlPlaneOptions {
  /** Fake nodes to create (default 1). */
  nodes?: number;
  /** Per-phase readiness timeout (default 120 s, or HARNESS_START_TIMEOUT_MS). */
  startTimeoutMs?: number;
  /** Keep the plane directory (logs) after stop (default: HARNESS_KEEP_DIR=1). */
  keepDir?: boolean;
  /**
   * kube-apiserver's watch cache (default off, or HARNESS_WATCH_CACHE=1). Off, every watch and list
   * is served by etcd, so compactEtcd() makes any older resourceVersion answer 410 Gone; on (the
   * production default), old resourceVersions stay watchable until they leave the cache window,
   * which ignores etcd compaction (k8s.io/apiserver v0.33 pkg/storage/cacher).
   */
  watchCache?: boolean;
  /** Extra flags per component, appended after the harness's own (later flags win in these binaries). */
  extraArgs?: Partial<Record<ComponentName, string[]>>;
  /** Progress messages (default: silent). */
  log?: (message: string) => void;
  /**
   * A real kubelet + containerd node beside the kwok nodes (docs/real-node.md). Opt-in per plane:
   * one real node runs per machine at a time, so a second plane asking for one waits for the first.
   */
  realNode?: boolean | RealNodeOptions;
  /**
   * The pod runner (pod-runner/): this project's own stand-in kubelet, which runs pods as local
   * processes. Only `npm run dev` asks for it, on a machine that cannot run the real node (no root,
   * missing packages); every test that runs pods uses the real node (docs/real-node.md).
   */
  podRunner?: boolean;
}

export class ControlPlaneStartError extends Error {}

/** Runs scripts/cluster/build.sh (a no-op once cached) and returns the directory holding the binaries. */
export async function ensureBinaries(log: (m: string) => void = () => {}): Promise<string> {
  const script = join(REPO_ROOT, "scripts/cluster/build.sh");
  return await new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
      for (const line of c.toString().split("\n")) if (line.startsWith("[control-plane build]")) log(line);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const bin = out.trim().split("\n").at(-1) ?? "";
      if (code === 0 && bin) resolvePromise(bin);
      else reject(new ControlPlaneStartError(`${script} failed (exit ${code}):\n${err.slice(-4000)}`));
    });
  });
}

function lastLines(file: string, n = 15): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-n).join("\n");
  } catch {
    return "(no log)";
  }
}

function notReady(component: string, logFile: string, what: string, detail?: string): ControlPlaneStartError {
  return new ControlPlaneStartError(
    `control plane: ${component} ${what}${detail ? ` (last check: ${detail})` : ""}; log: ${logFile}\n` +
      `--- last lines of ${logFile} ---\n${lastLines(logFile)}`,
  );
}

/**
 * Polls `check` until it returns true. Fails early, naming the component, if its process died;
 * on timeout the error names the component, what was awaited, the last check result and the log.
 */
async function waitFor(
  state: PlaneState,
  component: ComponentName,
  what: string,
  timeoutMs: number,
  check: () => Promise<true | string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const logFile = state.specs[component].logFile;
  let detail = "";
  while (Date.now() < deadline) {
    for (const c of COMPONENTS) {
      const pid = state.pids[c];
      if (pid && !groupAlive(pid)) throw notReady(c, state.specs[c].logFile, "exited while starting");
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
  throw notReady(component, logFile, `not ready after ${Math.round(timeoutMs / 1000)} s: ${what}`, detail);
}

export function apiOf(state: PlaneState): HarnessApi {
  return new HarnessApi({
    server: state.server,
    caFile: state.caFile,
    certFile: state.adminCertFile,
    keyFile: state.adminKeyFile,
  });
}

export function readPlaneState(stateFile: string): PlaneState {
  return JSON.parse(readFileSync(stateFile, "utf8")) as PlaneState;
}

export function writePlaneState(stateFile: string, state: PlaneState): void {
  const tmp = `${stateFile}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, stateFile);
  // The watchdog's view: one process group per line.
  const pgids = `${Object.values(state.pids)
    .filter((p) => p > 0)
    .join("\n")}\n`;
  writeFileSync(join(state.dir, "pgids.tmp"), pgids);
  renameSync(join(state.dir, "pgids.tmp"), join(state.dir, "pgids"));
}

function componentSpecs(
  bin: string,
  dir: string,
  etcdDataDir: string,
  ports: PlaneState["ports"],
  watchCache: boolean,
) {
  const p = (f: string) => join(dir, f);
  const kubeconfig = p("admin.kubeconfig");
  const spec = (name: ComponentName, args: string[]): ProcessSpec => ({
    name,
    bin: join(bin, name),
    args,
    logFile: p(`${name}.log`),
  });
  const etcdClient = `http://127.0.0.1:${ports.etcdClient}`;
  const etcdPeer = `http://127.0.0.1:${ports.etcdPeer}`;
  return {
    etcd: spec("etcd", [
      "--name=plane",
      `--data-dir=${etcdDataDir}`,
      `--listen-client-urls=${etcdClient}`,
      `--advertise-client-urls=${etcdClient}`,
      `--listen-peer-urls=${etcdPeer}`,
      `--initial-advertise-peer-urls=${etcdPeer}`,
      `--initial-cluster=plane=${etcdPeer}`,
      "--unsafe-no-fsync",
      "--logger=zap",
      "--log-level=warn",
    ]),
    "kube-apiserver": spec("kube-apiserver", [
      `--etcd-servers=${etcdClient}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${ports.apiServer}`,
      "--advertise-address=127.0.0.1",
      "--endpoint-reconciler-type=none",
      `--cert-dir=${dir}`,
      `--tls-cert-file=${p("apiserver.crt")}`,
      `--tls-private-key-file=${p("apiserver.key")}`,
      `--client-ca-file=${p("ca.crt")}`,
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${p("sa.pub")}`,
      `--service-account-signing-key-file=${p("sa.key")}`,
      "--service-cluster-ip-range=10.96.0.0/24",
      "--allow-privileged=true",
      // ServiceAccount: pods would wait for the default SA token; TaintNodesByCondition: new nodes
      // would carry a not-ready taint only the node-lifecycle controller (not run) removes.
      "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
      "--kubelet-preferred-address-types=InternalIP",
      "--enable-priority-and-fairness=false",
      "--profiling=false",
      `--watch-cache=${watchCache}`,
      "--v=1",
    ]),
    "kube-controller-manager": spec("kube-controller-manager", [
      `--kubeconfig=${kubeconfig}`,
      "--controllers=job-controller,garbage-collector-controller,ttl-after-finished-controller,namespace-controller,serviceaccount-token-controller,serviceaccount-controller",
      `--service-account-private-key-file=${p("sa.key")}`,
      `--root-ca-file=${p("ca.crt")}`,
      "--use-service-account-credentials=false",
      "--leader-elect=false",
      "--secure-port=0",
      "--v=1",
    ]),
    "kube-scheduler": spec("kube-scheduler", [
      `--kubeconfig=${kubeconfig}`,
      "--leader-elect=false",
      "--secure-port=0",
      "--v=1",
    ]),
    kwok: spec("kwok", [
      `--kubeconfig=${kubeconfig}`,
      `--config=${join(HERE, "kwok/stages.yaml")}`,
      "--enable-crds=Logs",
      "--manage-all-nodes=false",
      "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
      "--node-ip=127.0.0.1",
      `--node-port=${ports.kwok}`,
      `--server-address=127.0.0.1:${ports.kwok}`,
      "--cidr=10.244.0.1/16",
      "--node-lease-duration-seconds=40",
    ]),
  } satisfies Record<ComponentName, ProcessSpec>;
}

/**
 * What pods on a real node with Services need from the plane, as in a cluster: ServiceAccount tokens
 * (the admission plugin; the controller-manager publishes kube-root-ca.crt), EndpointSlices for
 * kube-proxy, and Deployments (an install from deploy/ runs its controller as one).
 */
function enableClusterServices(specs: Record<ComponentName, ProcessSpec>): void {
  const apiServer = specs["kube-apiserver"].args;
  const disabled = apiServer.findIndex((a) => a.startsWith("--disable-admission-plugins="));
  apiServer.splice(disabled, 1, "--disable-admission-plugins=TaintNodesByCondition");
  const kcm = specs["kube-controller-manager"].args;
  const controllers = kcm.findIndex((a) => a.startsWith("--controllers="));
  kcm[controllers] =
    `${kcm[controllers]},endpointslice-controller,root-ca-cert-publisher,deployment-controller,replicaset-controller`;
}

function startComponent(state: PlaneState, stateFile: string, name: ComponentName): void {
  state.pids[name] = startProcess(state.specs[name]).pid;
  writePlaneState(stateFile, state);
}

async function etcdHealthy(state: PlaneState): Promise<true | string> {
  const res = await fetch(`http://127.0.0.1:${state.ports.etcdClient}/health`);
  const body = await res.text();
  return res.ok && body.includes('"health":"true"') ? true : `HTTP ${res.status} ${body}`;
}

async function apiServerReady(state: PlaneState): Promise<true | string> {
  const res = await apiOf(state).request("GET", "/readyz", undefined, undefined, 5_000);
  return res.status === 200 ? true : `HTTP ${res.status} ${res.body.slice(0, 300)}`;
}

/** Applies every object of a YAML file with server-side apply. */
export async function applyYamlFile(
  api: HarnessApi,
  file: string,
): Promise<{ kind: string; name: string }[]> {
  const docs = parseAllDocuments(await readFile(file, "utf8"))
    .map((d) => d.toJS() as Record<string, unknown> | null)
    .filter((d): d is Record<string, unknown> => d !== null && typeof d === "object");
  const applied = [];
  for (const obj of docs) applied.push(await applyObject(api, obj));
  return applied;
}

/** Server-side apply of one object; supports the core group, apiextensions and namespaced CRs by REST mapping. */
export async function applyObject(
  api: HarnessApi,
  obj: Record<string, unknown>,
): Promise<{ kind: string; name: string }> {
  const apiVersion = String(obj.apiVersion ?? "");
  const kind = String(obj.kind ?? "");
  const meta = (obj.metadata ?? {}) as { name?: string; namespace?: string };
  if (!apiVersion || !kind || !meta.name)
    throw new Error(`cannot apply an object without apiVersion/kind/metadata.name`);
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const resources = (await api.ok("GET", base)) as {
    resources: { name: string; kind: string; namespaced: boolean }[];
  };
  const resource = resources.resources.find((r) => r.kind === kind && !r.name.includes("/"));
  if (!resource) throw new Error(`the API server does not serve kind ${kind} in ${apiVersion}`);
  const ns = resource.namespaced ? `/namespaces/${meta.namespace ?? "default"}` : "";
  await api.ok(
    "PATCH",
    `${base}${ns}/${resource.name}/${meta.name}?fieldManager=test-harness&force=true`,
    obj,
    "application/apply-patch+yaml",
  );
  return { kind, name: meta.name };
}

/** Waits until the named CRDs report Established=True. */
export async function waitCrdsEstablished(
  api: HarnessApi,
  names: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = names;
  while (Date.now() < deadline) {
    const next = [];
    for (const name of pending) {
      const res = await api.request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      const conds = ((res.json as { status?: { conditions?: { type: string; status: string }[] } })?.status
        ?.conditions ?? []) as { type: string; status: string }[];
      if (!conds.some((c) => c.type === "Established" && c.status === "True")) next.push(name);
    }
    pending = next;
    if (pending.length === 0) return;
    await sleep(100);
  }
  throw new Error(`CRDs not Established after ${timeoutMs / 1000} s: ${pending.join(", ")}`);
}

/** Applies every deploy/crds/*.yaml (or the given files) and waits for them to be Established. */
export async function installCrds(api: HarnessApi, files: string[]): Promise<string[]> {
  const names: string[] = [];
  for (const file of files) {
    for (const { kind, name } of await applyYamlFile(api, file)) {
      if (kind === "CustomResourceDefinition") names.push(name);
    }
  }
  await waitCrdsEstablished(api, names);
  return names;
}

/** Runs a tiny Job end to end: proves KCM (job controller), scheduler, kwok and the pod scripter work. */
async function probeWorkloads(state: PlaneState, scripter: PodScripter, timeoutMs: number): Promise<void> {
  const api = apiOf(state);
  await api.ok("POST", "/api/v1/namespaces", { metadata: { name: "harness-probe" } });
  await api.ok("POST", "/apis/batch/v1/namespaces/harness-probe/jobs", {
    metadata: { name: "probe" },
    spec: {
      backoffLimit: 0,
      template: {
        spec: { restartPolicy: "Never", containers: [{ name: "probe", image: "probe.invalid/none" }] },
      },
    },
  });
  type Pod = { spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string } };
  const pods = async () =>
    (
      (await api.ok("GET", "/api/v1/namespaces/harness-probe/pods?labelSelector=job-name%3Dprobe")) as {
        items: Pod[];
      }
    ).items;
  await waitFor(
    state,
    "kube-controller-manager",
    "the job controller creates the probe Job's pod",
    timeoutMs,
    async () => ((await pods()).length > 0 ? true : "no pod yet"),
  );
  await waitFor(state, "kube-scheduler", "the probe pod is bound to a kwok node", timeoutMs, async () =>
    (await pods())[0]?.spec?.nodeName ? true : "pod has no nodeName",
  );
  await waitFor(state, "kwok", "kwok starts the probe pod (podIP set)", timeoutMs, async () =>
    (await pods())[0]?.status?.podIP ? true : `phase ${(await pods())[0]?.status?.phase}`,
  );
  await waitFor(
    state,
    "kwok",
    "the probe pod ends Succeeded (pod scripter + kwok finish stage)",
    timeoutMs,
    async () => {
      const phase = (await pods())[0]?.status?.phase;
      return phase === "Succeeded" ? true : `phase ${phase}; scripter: ${scripter.lastError ?? "no error"}`;
    },
  );
  await api.request("DELETE", "/api/v1/namespaces/harness-probe");
}

/**
 * Waits for a new namespace's `default` ServiceAccount (the serviceaccount controller makes it): with
 * the ServiceAccount admission plugin on, a pod created before it is refused.
 */
export async function defaultServiceAccount(api: HarnessApi, ns: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await api.request("GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status !== 200) {
    if (Date.now() > deadline)
      throw new Error(`no ServiceAccount default in namespace ${ns} after ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/** Runs a pod on the runner node to its end: proves the scheduler binds to it and the runner runs it. */
async function probeRunner(state: PlaneState, runner: PodRunner, timeoutMs: number): Promise<void> {
  const api = apiOf(state);
  await api.ok("POST", "/api/v1/namespaces", { metadata: { name: "harness-runner-probe" } });
  await defaultServiceAccount(api, "harness-runner-probe");
  await api.ok("POST", "/api/v1/namespaces/harness-runner-probe/pods", {
    metadata: { name: "probe" },
    spec: {
      ...RUNNER_SCHEDULING,
      restartPolicy: "Never",
      containers: [{ name: "probe", image: "probe.invalid/none", command: ["/bin/true"] }],
    },
  });
  const deadline = Date.now() + timeoutMs;
  let phase: string | undefined;
  while (Date.now() < deadline) {
    const pod = (await api.ok("GET", "/api/v1/namespaces/harness-runner-probe/pods/probe")) as {
      status?: { phase?: string };
    };
    phase = pod.status?.phase;
    if (phase === "Succeeded") {
      await api.request("DELETE", "/api/v1/namespaces/harness-runner-probe");
      return;
    }
    await sleep(200);
  }
  throw new ControlPlaneStartError(
    `control plane: the pod runner did not run its probe pod to Succeeded in ${Math.round(timeoutMs / 1000)} s ` +
      `(phase ${phase}; runner: ${runner.lastError ?? "no error"}); log: ${runner.logFile}`,
  );
}

export class ControlPlane {
  private stopped = false;
  private readonly exitHook = () => this.killNow();

  constructor(
    readonly stateFile: string,
    private readonly scripter: PodScripter,
    private readonly keepDir: boolean,
    private readonly runner?: PodRunner,
  ) {
    process.on("exit", this.exitHook);
  }

  /** Set once the plane's real node started (startControlPlane's realNode option). */
  realNode?: RealNode;

  get state(): PlaneState {
    return readPlaneState(this.stateFile);
  }
  get kubeconfig(): string {
    return this.state.kubeconfig;
  }
  api(): HarnessApi {
    return apiOf(this.state);
  }

  /** Last-resort SIGKILL of every group if the owning process exits without calling stop(). */
  private killNow(): void {
    if (this.stopped) return;
    this.realNode?.stopNow();
    let pids: number[];
    try {
      pids = Object.values(this.state.pids);
    } catch {
      return; // state file already gone: stop() got that far
    }
    for (const pid of pids) {
      try {
        if (pid > 0) process.kill(-pid, "SIGKILL");
      } catch {}
    }
  }

  /** Stops every component (SIGTERM, then SIGKILL), removes the etcd data and, unless kept, the plane dir. */
  async stop(keepDir = this.keepDir): Promise<void> {
    if (this.stopped) return;
    await this.scripter.stop();
    await this.runner?.stop();
    // First, while the API server still answers: the machine is put back as it was.
    await this.realNode?.stop();
    const state = this.state;
    for (const name of [...COMPONENTS].reverse()) {
      const pid = state.pids[name];
      if (pid > 0) await stopGroup(pid);
    }
    this.stopped = true;
    process.off("exit", this.exitHook);
    await rm(join(state.dir, "pgids"), { force: true });
    await rm(state.etcdDataDir, { recursive: true, force: true });
    if (!keepDir) await rm(state.dir, { recursive: true, force: true });
  }
}

/** Restarts kube-apiserver only (same flags and port) and waits until it is ready again. Works from any process. */
export async function restartApiServer(stateFile: string, timeoutMs = 120_000): Promise<void> {
  const state = readPlaneState(stateFile);
  // kube-apiserver sometimes lingers for seconds after it stopped listening; a restart need not wait.
  await stopGroup(state.pids["kube-apiserver"], 2_000);
  startComponent(state, stateFile, "kube-apiserver");
  await waitFor(state, "kube-apiserver", "/readyz after restart", timeoutMs, () => apiServerReady(state));
  // kwok stands in for the kubelets, which keep running their pods and report them when the API
  // server is back. kwok v0.7 can instead lose a pod's delayed finish stage across the outage (seen:
  // a pod past its finish-at still Running minutes later), so it restarts too and re-reads every
  // pod; what the tests prove about the controller is unchanged.
  await stopGroup(state.pids.kwok, 2_000);
  startComponent(state, stateFile, "kwok");
  await waitKwokServesLogs(state, timeoutMs);
}

interface KwokLogs {
  metadata: { name: string; namespace: string };
  spec?: { logs?: { containers?: string[]; logsFile?: string }[] };
}

/** The annotation the harness bumps on a kwok Logs object to make kwok re-read its Logs cache. */
const KWOK_KICK_ANNOTATION = "harness.test.example/kwok-logs-kick";

/**
 * After a kwok restart, waits until kwok serves the log of every kwok Logs object whose file has
 * content, asking kwok's own port directly (the API server only forwards the request to it).
 *
 * kwok v0.7 caches the Logs objects it serves from under its informer's last resourceVersion
 * (`withCache` in sigs.k8s.io/kwok/pkg/config/resources/cache.go), but the informer records that
 * version when the initial list enters its queue, before every object has reached the store the
 * cache reads (client-go's reflector and DeltaFIFO). A log request answered in that window caches
 * a partial list, and nothing refreshes it until some Logs object changes: kwok then answers
 * `400 no logs found for container …` for the missing pods indefinitely (one pod for two minutes
 * in one loaded run, all sampled pods in another; shown on purpose by the harness test of
 * restartApiServer). So every object is asked for, and while any is refused the harness changes
 * one Logs object (an annotation), which moves the version on and makes kwok rebuild its list from
 * the now complete store.
 */
export async function waitKwokServesLogs(state: PlaneState, timeoutMs: number): Promise<void> {
  const api = apiOf(state);
  const all = (await api.ok("GET", "/apis/kwok.x-k8s.io/v1alpha1/logs")) as { items?: KwokLogs[] };
  const hasContent = (file: string | undefined) =>
    file !== undefined && existsSync(file) && statSync(file).size > 0;
  let pending: { ns: string; pod: string; container: string; file: string }[] = [];
  for (const logs of all.items ?? []) {
    const entry = logs.spec?.logs?.find((e) => hasContent(e.logsFile) && e.containers?.[0] !== undefined);
    if (entry?.containers?.[0] === undefined) continue;
    pending.push({
      ns: logs.metadata.namespace,
      pod: logs.metadata.name,
      container: entry.containers[0],
      file: entry.logsFile as string,
    });
  }
  const base = `http://127.0.0.1:${state.ports.kwok}/containerLogs`;
  let kicks = 0;
  await waitFor(state, "kwok", "serving every pod's log again after its restart", timeoutMs, async () => {
    const answers: string[] = [];
    const still: typeof pending = [];
    let refused: (typeof pending)[number] | undefined;
    // A test that ended meanwhile may have removed its pods' log files: nothing to serve.
    pending = pending.filter((p) => hasContent(p.file));
    for (let i = 0; i < pending.length; i += 8) {
      const batch = pending.slice(i, i + 8);
      const results = await Promise.all(
        batch.map(async ({ ns, pod, container }) => {
          const res = await fetch(`${base}/${ns}/${pod}/${encodeURIComponent(container)}`);
          return { status: res.status, body: await res.text() };
        }),
      );
      results.forEach((res, j) => {
        const sample = batch[j] as (typeof pending)[number];
        if (res.status === 200 && res.body.length > 0) return;
        still.push(sample);
        if (res.status === 400 && res.body.includes("no logs found")) refused ??= sample;
        if (answers.length < 3)
          answers.push(
            `${sample.ns}/${sample.pod}: HTTP ${res.status} ${JSON.stringify(res.body.slice(0, 200))}`,
          );
      });
    }
    pending = still;
    if (pending.length === 0) return true;
    if (refused !== undefined) {
      kicks += 1;
      const res = await api.request(
        "PATCH",
        `/apis/kwok.x-k8s.io/v1alpha1/namespaces/${refused.ns}/logs/${refused.pod}`,
        { metadata: { annotations: { [KWOK_KICK_ANNOTATION]: String(kicks) } } },
        "application/merge-patch+json",
      );
      // Deleted meanwhile (with its pod): nothing to wait for.
      if (res.status === 404) pending = pending.filter((p) => p !== refused);
    }
    return `${pending.length} Logs object(s) not served, ${kicks} kick(s); ${answers.join("; ")}`;
  });
}

/**
 * Compacts etcd at its current revision (through etcd's HTTP gRPC gateway), so any resourceVersion
 * older than now is compacted away. Returns the revision compacted at.
 */
export async function compactEtcd(stateFile: string): Promise<number> {
  const state = readPlaneState(stateFile);
  const base = `http://127.0.0.1:${state.ports.etcdClient}/v3`;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: "POST", body: JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`etcd ${path} -> HTTP ${res.status}: ${text}`);
    return JSON.parse(text) as { header?: { revision?: string } };
  };
  // Any key works to read the header; this one never exists.
  const range = await post("/kv/range", { key: Buffer.from("/harness/none").toString("base64") });
  const revision = Number(range.header?.revision);
  if (!Number.isInteger(revision) || revision < 1)
    throw new Error(`etcd returned no revision: ${JSON.stringify(range)}`);
  await post("/kv/compaction", { revision: String(revision), physical: true });
  return revision;
}

/** Starts a plane; on an unlucky port clash (another plane took a probed port) it retries once. */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  try {
    return await startOnce(options);
  } catch (err) {
    if (!(err instanceof ControlPlaneStartError) || !/address already in use/.test(err.message)) throw err;
    options.log?.("port clash while starting; retrying with fresh ports");
    return await startOnce(options);
  }
}

async function startOnce(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.log ?? (() => {});
  const timeoutMs = options.startTimeoutMs ?? Number(process.env.HARNESS_START_TIMEOUT_MS ?? 120_000);
  const keepDir = options.keepDir ?? process.env.HARNESS_KEEP_DIR === "1";
  const bin = await ensureBinaries(log);

  const dir = await mkdtemp(join(tmpdir(), "k8s-plane-"));
  const shm = existsSync("/dev/shm") ? "/dev/shm" : dir;
  const etcdDataDir = await mkdtemp(join(shm, "k8s-plane-etcd-"));
  await mkdir(join(dir, "pod-logs"));
  const [etcdClient = 0, etcdPeer = 0, apiServer = 0, kwok = 0] = await freePorts(4);
  const ports = { etcdClient, etcdPeer, apiServer, kwok };
  const certs = await generateCerts(dir);
  const server = `https://127.0.0.1:${apiServer}`;
  const kubeconfig = join(dir, "admin.kubeconfig");
  await writeAdminKubeconfig(kubeconfig, server, certs);

  const stateFile = join(dir, "state.json");
  const state: PlaneState = {
    dir,
    etcdDataDir,
    kubeconfig,
    server,
    caFile: certs.caCert,
    adminCertFile: certs.adminCert,
    adminKeyFile: certs.adminKey,
    ports,
    specs: componentSpecs(
      bin,
      dir,
      etcdDataDir,
      ports,
      options.watchCache ?? process.env.HARNESS_WATCH_CACHE === "1",
    ),
    pids: { etcd: 0, "kube-apiserver": 0, "kube-controller-manager": 0, "kube-scheduler": 0, kwok: 0 },
    nodes: [],
  };
  if (options.realNode) {
    const apiServer = state.specs["kube-apiserver"].args;
    // The kubelet authenticates as system:node:<name>; the Node authorizer and NodeRestriction give
    // it exactly a kubelet's rights (only its own node, its pods' secrets). Replaced, not appended:
    // kube-apiserver adds up repeated --authorization-mode flags and refuses RBAC twice.
    apiServer.splice(apiServer.indexOf("--authorization-mode=RBAC"), 1, "--authorization-mode=Node,RBAC");
    apiServer.push(
      "--enable-admission-plugins=NodeRestriction",
      // pods/log, exec and attach: the API server calls the kubelet with the plane's admin certificate.
      `--kubelet-client-certificate=${certs.adminCert}`,
      `--kubelet-client-key=${certs.adminKey}`,
    );
    if (options.realNode !== true && options.realNode.services) enableClusterServices(state.specs);
  }
  for (const [name, extra] of Object.entries(options.extraArgs ?? {})) {
    state.specs[name as ComponentName].args.push(...(extra ?? []));
  }
  writePlaneState(stateFile, state);
  const watchdog = spawn(
    "bash",
    [join(REPO_ROOT, "scripts/cluster/watchdog.sh"), String(process.pid), dir, etcdDataDir],
    { detached: true, stdio: "ignore" },
  );
  watchdog.unref();

  const scripter = new PodScripter(apiOf(state), join(dir, "pod-logs"), join(dir, "pod-scripter.log"));
  const runner = options.podRunner
    ? new PodRunner({
        api: apiOf(state),
        planeDir: dir,
        ...(await prepareRunnerImages(join(dir, "image-bin"))),
      })
    : undefined;
  const plane = new ControlPlane(stateFile, scripter, keepDir, runner);
  try {
    log(`starting etcd on 127.0.0.1:${ports.etcdClient} (dir ${dir})`);
    startComponent(state, stateFile, "etcd");
    await waitFor(state, "etcd", "/health", timeoutMs, () => etcdHealthy(state));

    log(`starting kube-apiserver on ${server}`);
    startComponent(state, stateFile, "kube-apiserver");
    await waitFor(state, "kube-apiserver", "/readyz", timeoutMs, () => apiServerReady(state));
    const api = apiOf(state);
    // kwok needs its Logs CRD before it starts (it is enabled with --enable-crds=Logs).
    await installCrds(api, [join(HERE, "kwok/logs-crd.yaml")]);

    log("starting kube-controller-manager, kube-scheduler, kwok");
    startComponent(state, stateFile, "kube-controller-manager");
    startComponent(state, stateFile, "kube-scheduler");
    startComponent(state, stateFile, "kwok");
    scripter.start();
    if (runner) {
      await runner.start();
      state.runner = { node: runner.nodeName, logFile: runner.logFile };
    }

    const nodeCount = options.nodes ?? 1;
    for (let i = 0; i < nodeCount; i++) {
      const name = `kwok-node-${i}`;
      await api.ok("POST", "/api/v1/nodes", {
        metadata: {
          name,
          annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
          labels: {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            type: "kwok",
          },
        },
      });
      state.nodes.push(name);
    }
    writePlaneState(stateFile, state);
    await waitFor(state, "kwok", "fake nodes Ready", timeoutMs, async () => {
      for (const name of state.nodes) {
        const node = (await api.ok("GET", `/api/v1/nodes/${name}`)) as {
          status?: { conditions?: { type: string; status: string }[] };
        };
        const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        if (!ready) return `node ${name} not Ready`;
      }
      return true;
    });
    await probeWorkloads(state, scripter, timeoutMs);
    if (runner) await probeRunner(state, runner, timeoutMs);
    if (options.realNode) {
      plane.realNode = await startRealNode(
        { planeDir: dir, server, caFile: certs.caCert, binDir: bin, api, log },
        options.realNode === true ? {} : options.realNode,
      );
      state.realNode = plane.realNode.state;
      writePlaneState(stateFile, state);
    }
    log(`control plane ready; KUBECONFIG=${kubeconfig}`);
    return plane;
  } catch (err) {
    // Stop the processes but keep the logs the error points at.
    await plane.stop(true).catch(() => {});
    throw err;
  }
}

/** True when none of the plane's ports is in use anymore (used by the teardown test). */
export async function planePortsFree(state: PlaneState): Promise<boolean> {
  for (const port of Object.values(state.ports)) if (!(await portIsFree(port))) return false;
  return true;
}

/** `kubectl` against a plane, for dev.sh messages and debugging. */
export async function kubectl(state: PlaneState, args: string[]): Promise<string> {
  const { stdout } = await runFile("kubectl", [`--kubeconfig=${state.kubeconfig}`, ...args]);
  return stdout;
}
