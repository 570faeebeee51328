/**
 * What the install test (install.test.ts) uses besides the plane: kubectl as a user runs it, the
 * overlay pointing the installed controller at the test's local servers, the Prometheus Operator
 * CRDs a user's cluster would have, and reads of Agents, Jobs and Events through the API.
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import type { HarnessApi } from "../harness/api.js";
import { eventually } from "../harness/eventually.js";

const run = promisify(execFile);

export const REPO = resolve(import.meta.dirname, "../..");
export const NS = "ai-agents";
export const AGENTS = `/apis/agents.re-cinq.com/v1beta1/namespaces/${NS}/agents`;

/**
 * The Prometheus Operator release whose CRDs stand for a user's monitoring stack (PodMonitor,
 * PrometheusRule): components/monitoring is applied against their real schemas.
 */
export const PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0";

export interface Kubectl {
  (...args: string[]): Promise<string>;
  /** stdout and stderr (kubectl prints admission warnings on stderr). */
  both(...args: string[]): Promise<{ stdout: string; stderr: string }>;
}

/** kubectl from the repository's root, as the docs' commands are written. */
export function kubectlWith(kubeconfig: () => string, env: NodeJS.ProcessEnv = process.env): Kubectl {
  const both = async (...args: string[]) =>
    // Last: kubectl refuses flags before a plugin's name (`kubectl agent …`).
    await run("kubectl", [...args, `--kubeconfig=${kubeconfig()}`], { cwd: REPO, env, maxBuffer: 32 << 20 });
  const stdout = async (...args: string[]) => (await both(...args)).stdout;
  return Object.assign(stdout, { both });
}

/** The two CRDs components/monitoring needs, from the Prometheus Operator's Go module. */
export async function prometheusOperatorCrds(): Promise<string[]> {
  const { stdout } = await run("go", ["mod", "download", "-json", PROMETHEUS_OPERATOR], { cwd: REPO });
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${PROMETHEUS_OPERATOR}: no directory in ${stdout}`);
  return ["podmonitors", "prometheusrules"].map((kind) =>
    join(dir, "example", "prometheus-operator-crd", `monitoring.coreos.com_${kind}.yaml`),
  );
}

/**
 * Writes `<dir>/kustomization.yaml`: test/install plus the controller's env (merged by name) and,
 * for an upgrade, the controller image's new tag, as a user's own overlay would set them.
 */
export async function writeUserOverlay(
  dir: string,
  o: { env: Record<string, string>; controllerTag?: string; podCidr?: string },
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "agent-controller", namespace: NS },
    spec: {
      template: {
        spec: {
          containers: [
            { name: "controller", env: Object.entries(o.env).map(([name, value]) => ({ name, value })) },
          ],
        },
      },
    },
  };
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: [relative(dir, join(REPO, "test", "install"))],
    patches: [
      { patch: JSON.stringify(deployment) },
      // docs/security.md#admission-webhook: the admission policy's except is the cluster's pod CIDR.
      ...(o.podCidr
        ? [
            {
              target: { kind: "NetworkPolicy", name: "agent-controller-admission-ingress" },
              patch: JSON.stringify([
                { op: "replace", path: "/spec/ingress/1/from/0/ipBlock/except", value: [o.podCidr] },
              ]),
            },
          ]
        : []),
    ],
    ...(o.controllerTag
      ? { images: [{ name: "ghcr.io/re-cinq/ai-agent-controller", newTag: o.controllerTag }] }
      : {}),
  };
  await writeFile(join(dir, "kustomization.yaml"), JSON.stringify(kustomization, null, 2));
  return dir;
}

export interface AgentObject {
  metadata: { name: string; uid?: string };
  status?: {
    phase?: string;
    output?: string;
    failureReason?: string;
    exitCode?: number;
    costUSD?: string | number;
    sessionId?: string;
    prUrl?: string;
    batchId?: string;
    batchProvider?: string;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export async function terminalAgent(api: HarnessApi, name: string, timeoutMs: number): Promise<AgentObject> {
  return await eventually(
    `Agent ${name} terminal`,
    async () => {
      const a = (await api.ok("GET", `${AGENTS}/${name}`)) as AgentObject;
      return a.status?.phase === "Succeeded" || a.status?.phase === "Failed" ? a : undefined;
    },
    timeoutMs,
  );
}

export async function jobsOf(api: HarnessApi, agent: string): Promise<number> {
  const jobs = (await api.ok(
    "GET",
    `/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=agents.re-cinq.com%2Fagent%3D${agent}`,
  )) as { items: unknown[] };
  return jobs.items.length;
}

/** The reasons of the Events about an Agent, oldest first. */
export async function eventReasons(api: HarnessApi, agent: string): Promise<string[]> {
  const events = (await api.ok(
    "GET",
    `/apis/events.k8s.io/v1/namespaces/${NS}/events?fieldSelector=regarding.name%3D${agent}`,
  )) as { items: { reason?: string; eventTime?: string; metadata: { creationTimestamp?: string } }[] };
  return events.items
    .sort((a, b) =>
      (a.eventTime ?? a.metadata.creationTimestamp ?? "").localeCompare(
        b.eventTime ?? b.metadata.creationTimestamp ?? "",
      ),
    )
    .map((e) => e.reason ?? "");
}

export function condition(agent: AgentObject, type: string): string | undefined {
  const c = agent.status?.conditions?.find((x) => x.type === type);
  return c ? `${c.status} ${c.reason ?? ""}`.trim() : undefined;
}

export async function leaseHolder(api: HarnessApi): Promise<string> {
  const lease = (await api.ok(
    "GET",
    `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/agent-controller`,
  )) as {
    spec: { holderIdentity?: string };
  };
  return lease.spec.holderIdentity ?? "";
}

/** The Events about the controller's Pods with `reason`: the Pod's name and the note. */
export async function controllerPodEvents(
  api: HarnessApi,
  reason: string,
): Promise<{ pod: string; note: string }[]> {
  const events = (await api.ok(
    "GET",
    `/apis/events.k8s.io/v1/namespaces/${NS}/events?fieldSelector=regarding.kind%3DPod`,
  )) as { items: { reason?: string; note?: string; regarding?: { name?: string } }[] };
  return events.items
    .filter((e) => e.reason === reason && (e.regarding?.name ?? "").startsWith("agent-controller-"))
    .map((e) => ({ pod: e.regarding?.name ?? "", note: e.note ?? "" }));
}

/** The core/v1 Events about the controller's Pods (the kubelet's) with `reason`: their messages. */
export async function kubeletPodMessages(api: HarnessApi, reason: string): Promise<string[]> {
  const events = (await api.ok("GET", `/api/v1/namespaces/${NS}/events`)) as {
    items: { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }[];
  };
  return events.items
    .filter(
      (e) =>
        e.reason === reason &&
        e.involvedObject?.kind === "Pod" &&
        (e.involvedObject.name ?? "").startsWith("agent-controller-"),
    )
    .map((e) => e.message ?? "");
}

/** docs/admission.md#without-cert-manager: the webhook's serving certificate, issued by the script. */
export async function issueCertificate(kubeconfig: string, ...args: string[]): Promise<string> {
  return (
    await run(
      "bash",
      ["deploy/components/admission/issue-certificate.sh", ...args, `--kubeconfig=${kubeconfig}`],
      {
        cwd: REPO,
      },
    )
  ).stdout;
}

/** The controller Deployment's replica counts. */
export async function controllerReplicas(
  api: HarnessApi,
): Promise<{ readyReplicas?: number; updatedReplicas?: number; replicas?: number }> {
  return (
    (
      (await api.ok("GET", `/apis/apps/v1/namespaces/${NS}/deployments/agent-controller`)) as {
        status?: { readyReplicas?: number; updatedReplicas?: number; replicas?: number };
      }
    ).status ?? {}
  );
}

/**
 * The install of docs/install.md in one go, for callers that run things on the installed system
 * rather than test the install itself (the soak, docs/soak.md): the Prometheus Operator CRDs,
 * `kubectl apply -k` of the user overlay over test/install, the webhook's certificate, the Secrets,
 * then both controller replicas Ready.
 */
export async function installSystem(o: {
  kubectl: Kubectl;
  api: HarnessApi;
  kubeconfig: string;
  /** Where the user overlay is written. */
  overlayDir: string;
  env: Record<string, string>;
  podCidr: string;
  /** agent-secrets' keys and values. */
  secrets: Record<string, string>;
  /** agent-realtime's api-token. */
  apiToken: string;
  readyTimeoutMs?: number;
}): Promise<void> {
  for (const crd of await prometheusOperatorCrds()) await o.kubectl("apply", "--server-side", "-f", crd);
  await o.kubectl("apply", "-k", await writeUserOverlay(o.overlayDir, { env: o.env, podCidr: o.podCidr }));
  await issueCertificate(o.kubeconfig);
  await o.kubectl(
    "-n",
    NS,
    "create",
    "secret",
    "generic",
    "agent-secrets",
    ...Object.entries(o.secrets).map(([k, v]) => `--from-literal=${k}=${v}`),
  );
  await o.kubectl(
    "-n",
    NS,
    "create",
    "secret",
    "generic",
    "agent-realtime",
    `--from-literal=api-token=${o.apiToken}`,
    `--from-literal=signing-key=${o.apiToken}-signing`,
  );
  await eventually(
    "the controller Deployment's 2 replicas Ready",
    async () => ((await controllerReplicas(o.api)).readyReplicas === 2 ? true : undefined),
    o.readyTimeoutMs ?? 300_000,
  );
}
