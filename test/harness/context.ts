/**
 * What integration tests use to reach the run's control plane (started by global-setup.ts).
 * See test/harness/README.md for the pod-outcome and pod-log API.
 */
import { randomBytes } from "node:crypto";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { inject } from "vitest";
import * as plane from "./cluster.js";
import { type PodScript, SCRIPT_RULE_LABEL, validatePodScript } from "./pod-script.js";
import { MACHINE } from "./real-node/config.js";
import { REAL_NODE_SCHEDULING, restartKubelet } from "./real-node/index.js";

// The shared waits with a deadline (eventually.ts), here too for the files that import this one.
export { eventually, eventuallyPasses } from "./eventually.js";
export {
  EXIT_CODE_ANNOTATION,
  LOGS_ANNOTATION_PREFIX,
  type PodScript,
  podScriptAnnotations,
  RUN_TIME_ANNOTATION,
} from "./pod-script.js";

/** Path of the admin kubeconfig of this run's control plane. */
export function kubeconfigPath(): string {
  return inject("kubeconfigPath");
}

/** The plane's state file (pids, ports, flags); see cluster.ts PlaneState. */
export function controlPlaneStateFile(): string {
  return inject("controlPlaneStateFile");
}

export function controlPlaneState(): plane.PlaneState {
  return plane.readPlaneState(controlPlaneStateFile());
}

/** Names of the CRDs installed from deploy/crds by the global setup. */
export function installedCrds(): string[] {
  return inject("installedCrds");
}

/** A fresh admin KubeConfig for this run's control plane. */
export function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath());
  return kc;
}

/** Creates a namespace named `<prefix>-<random>` (a valid DNS label) and returns its name. */
export async function createTestNamespace(prefix: string): Promise<string> {
  const clean = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 50);
  if (clean.length === 0)
    throw new Error(`createTestNamespace: prefix ${JSON.stringify(prefix)} has no usable characters`);
  const name = `${clean}-${randomBytes(4).toString("hex")}`;
  await kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespace({
      body: { metadata: { name, labels: { "harness.test.example/test-namespace": "true" } } },
    });
  return name;
}

let ruleCounter = 0;

/**
 * Chooses outcome and logs of pods that do not exist yet: every pod created later in `namespace`
 * whose labels include all of `matchLabels` (e.g. `{ "job-name": "my-job" }` or the controller's
 * `agents.re-cinq.com/agent` label) follows `script`. Several matching calls merge, later ones win
 * per field. Pod-template annotations (podScriptAnnotations) win over these rules.
 * Must be called before the pod is created; returns the rule's ConfigMap name.
 */
export async function scriptPods(
  namespace: string,
  matchLabels: Record<string, string>,
  script: PodScript,
): Promise<string> {
  validatePodScript(script);
  if (Object.keys(matchLabels).length === 0) {
    throw new Error("scriptPods: matchLabels must not be empty (it would script every pod in the namespace)");
  }
  ruleCounter += 1;
  // Unique and increasing across test workers: wall-clock ms plus a per-process counter.
  const order = Date.now() * 1000 + (ruleCounter % 1000);
  const name = `pod-script-${order.toString(36)}-${randomBytes(2).toString("hex")}`;
  await kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name, labels: { [SCRIPT_RULE_LABEL]: "true" } },
        data: {
          order: String(order),
          matchLabels: JSON.stringify(matchLabels),
          script: JSON.stringify(script),
        },
      },
    });
  return name;
}

/** Shorthand: the log of each named container of matching pods (`{ agent: ["line 1", "line 2"] }`). */
export function setPodLogs(
  namespace: string,
  matchLabels: Record<string, string>,
  logs: Record<string, string | readonly string[]>,
): Promise<string> {
  return scriptPods(namespace, matchLabels, { logs });
}

/**
 * Compacts etcd at its current revision: any resourceVersion obtained before this call is then
 * older than the compaction. Returns the revision.
 */
export function compactEtcd(): Promise<number> {
  return plane.compactEtcd(controlPlaneStateFile());
}

/**
 * Restarts kube-apiserver only (same port and flags); resolves once /readyz is OK again.
 * Other test files running at the same time see the API go away briefly.
 */
export function restartApiServer(): Promise<void> {
  return plane.restartApiServer(controlPlaneStateFile());
}

/**
 * Kills the real node's kubelet and starts it again after `downMs` (same flags), from a test
 * process: its pods keep running in containerd meanwhile. The new pid goes into the state file.
 */
export async function restartRealKubelet(downMs = 0): Promise<void> {
  const state = controlPlaneState();
  if (!state.realNode) throw new Error(`the plane has no real node: ${realNodeProblem()}`);
  const node = { state: structuredClone(state.realNode) };
  await restartKubelet(node, downMs);
  plane.writePlaneState(controlPlaneStateFile(), {
    ...plane.readPlaneState(controlPlaneStateFile()),
    realNode: node.state,
  });
}

// Pods that really run: the real node (docs/real-node.md, test/harness/README.md).
export {
  createFakeCliJournal,
  type FakeCliInvocation,
  type FakeCliJournal,
  type FakeCliScript,
  fakeCliEnv,
} from "../fakes/cli/script.js";
export { debianStandInImage } from "./images.js";
export { MACHINE as REAL_NODE } from "./real-node/config.js";
export {
  FAKE_CLI_STATION_IMAGE,
  NO_CLI_STATION_IMAGE,
  REAL_CLI_STATION_IMAGE,
} from "./station-images.js";

/**
 * Why run pods cannot run in this run ("" when they can): the shared plane has a real node only
 * where the machine can run one (root, the Debian packages). A test that runs pods skips with it.
 */
export function realNodeProblem(): string {
  return inject("realNodeProblem");
}

/** The agent image built from the Dockerfile and imported into the real node: the controller's AGENT_IMAGE. */
export function agentImage(): string {
  const name = controlPlaneState().realNode?.images.agent?.name;
  if (name === undefined)
    throw new Error(`the plane has no real node with the agent image: ${realNodeProblem()}`);
  return name;
}

/**
 * The address a pod on the real node reaches this machine's listeners at: the node's bridge
 * gateway (pods cannot reach 127.0.0.1 of the host). Servers a run pod calls (model servers, sinks,
 * git, file sources) listen on it.
 */
export function podReachableHost(): string {
  return MACHINE.gateway;
}

/**
 * Why the real agent CLIs cannot be used in this run ("" when they can): the global setup installs
 * them into the cache before the plane starts (test/harness/agent-clis.ts); a test that needs them
 * skips with this reason.
 */
export function agentClisProblem(): string {
  return inject("agentClisProblem");
}

/**
 * The pod-spec fragment (nodeSelector + toleration) that puts a pod on the real node; spread it
 * into a pod template's `spec` (e.g. a Station's `spec.template.spec`), as a platform team does for
 * a node pool. A fresh copy per call.
 */
export function realNodePodTemplate(): {
  nodeSelector: Record<string, string>;
  tolerations: { key: string; operator: string; value: string; effect: string }[];
} {
  return structuredClone({
    nodeSelector: { ...REAL_NODE_SCHEDULING.nodeSelector },
    tolerations: REAL_NODE_SCHEDULING.tolerations.map((t) => ({ ...t })),
  });
}
