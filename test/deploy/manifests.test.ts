/**
 * The kustomize install (docs/deploy.md, docs/controller.md#configuration): rendered with `kubectl kustomize`
 * exactly as a user would from a checkout, then checked object by object.
 */

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  CRD_FILES,
  findObject,
  type K8sObject,
  objectKey,
  REPO_ROOT,
  renderInstall,
  renderKustomize,
} from "./render.js";

const crdsGenerated = CRD_FILES.every((f) => existsSync(join(REPO_ROOT, "deploy", "crds", f)));

type Env = { name: string; value?: string; valueFrom?: unknown };

function controllerContainer(objects: K8sObject[]) {
  const deployment = findObject(objects, "Deployment", "agent-controller");
  const containers = deployment.spec.template.spec.containers as Array<Record<string, unknown>>;
  expect(containers).toHaveLength(1);
  return containers[0] as { env: Env[]; ports: unknown[]; [k: string]: unknown };
}

function envMap(objects: K8sObject[]): Map<string, Env> {
  return new Map(controllerContainer(objects).env.map((e) => [e.name, e]));
}

const CONTROLLER_RULES = [
  {
    apiGroups: ["agents.re-cinq.com"],
    resources: ["agents"],
    verbs: ["get", "list", "watch", "patch", "delete"],
  },
  { apiGroups: ["agents.re-cinq.com"], resources: ["agents/status"], verbs: ["patch"] },
  { apiGroups: ["agents.re-cinq.com"], resources: ["agents/finalizers"], verbs: ["update"] },
  {
    apiGroups: ["agents.re-cinq.com"],
    resources: ["stations", "agentdefinitions"],
    verbs: ["get", "list", "watch"],
  },
  { apiGroups: ["agents.re-cinq.com"], resources: ["modelusages"], verbs: ["list"] },
  { apiGroups: ["agents.re-cinq.com"], resources: ["stations/status"], verbs: ["patch"] },
  { apiGroups: ["batch"], resources: ["jobs"], verbs: ["create", "get", "list", "watch", "delete"] },
  { apiGroups: [""], resources: ["pods"], verbs: ["list"] },
  { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
  { apiGroups: [""], resources: ["configmaps"], resourceNames: ["agent-controller-prices"], verbs: ["get"] },
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    resourceNames: ["agent-controller"],
    verbs: ["get", "patch"],
  },
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
  { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
];

let base: K8sObject[];
let withBatch: K8sObject[];
let withRealtime: K8sObject[];
let withBoth: K8sObject[];

beforeAll(async () => {
  [base, withBatch, withRealtime, withBoth] = await Promise.all([
    renderInstall([]),
    renderInstall(["batch"]),
    renderInstall(["realtime"]),
    renderInstall(["batch", "realtime"]),
  ]);
}, 120_000);

describe("deploy/kustomization.yaml", () => {
  it("lists the CRD files codegen writes to deploy/crds", async () => {
    const k = parse(await readFile(join(REPO_ROOT, "deploy", "kustomization.yaml"), "utf8")) as {
      resources: string[];
      namespace: string;
    };
    expect(k.namespace).toBe("ai-agents");
    expect(k.resources.filter((r) => r.startsWith("crds/"))).toEqual(CRD_FILES.map((f) => `crds/${f}`));
  });
});

describe("every component, listed in a user's overlay that sets no namespace", () => {
  /** Kinds that live outside any namespace. */
  const CLUSTER_SCOPED = new Set(["Namespace", "CustomResourceDefinition", "ValidatingWebhookConfiguration"]);
  it("puts every namespaced object in ai-agents (the base's namespace does not reach a component)", async () => {
    const components = (await readdir(join(REPO_ROOT, "deploy", "components"), { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(components).toContain("monitoring");
    const all = await renderInstall(components);
    const astray = all
      .filter((o) => !CLUSTER_SCOPED.has(o.kind) && o.metadata.namespace !== "ai-agents")
      .map(objectKey);
    expect(astray).toEqual([]);
  }, 60_000);
});

describe("kubectl kustomize deploy", () => {
  // deploy/crds is written by codegen; until it is, the staged installs use schemas/crds.
  it.runIf(crdsGenerated)(
    "renders the checkout's deploy/ as it stands, identical to the staged base",
    async () => {
      const direct = await renderKustomize(join(REPO_ROOT, "deploy"));
      expect(direct.map(objectKey).sort()).toEqual(base.map(objectKey).sort());
      expect(direct.filter((o) => o.kind !== "CustomResourceDefinition")).toEqual(
        base.filter((o) => o.kind !== "CustomResourceDefinition"),
      );
    },
  );
});

describe("base install", () => {
  it("holds exactly the expected objects, every namespaced one in ai-agents", () => {
    expect(base.map(objectKey).sort()).toEqual(
      [
        "ConfigMap/ai-agents/agent-controller-prices",
        "CustomResourceDefinition//agentdefinitions.agents.re-cinq.com",
        "CustomResourceDefinition//agents.agents.re-cinq.com",
        "CustomResourceDefinition//modelusages.agents.re-cinq.com",
        "CustomResourceDefinition//stations.agents.re-cinq.com",
        "Deployment/ai-agents/agent-controller",
        "Namespace//ai-agents",
        "NetworkPolicy/ai-agents/agent-job-egress",
        "Role/ai-agents/agent-controller",
        "Role/ai-agents/agent-launcher",
        "RoleBinding/ai-agents/agent-controller",
        "RoleBinding/ai-agents/agent-launcher",
        "ServiceAccount/ai-agents/agent-controller",
        "ServiceAccount/ai-agents/agent-launcher",
        "Service/ai-agents/agent-controller-metrics",
      ].sort(),
    );
  });

  it("puts the controller's metrics behind the Service agent-controller-metrics, on the health port", () => {
    const service = findObject(base, "Service", "agent-controller-metrics");
    expect(service.spec.selector).toEqual({ "agents.re-cinq.com/component": "controller" });
    expect(service.spec.ports).toEqual([
      { name: "metrics", port: 8081, targetPort: "health", protocol: "TCP" },
    ]);
  });

  it("labels the namespace for pod security baseline enforcement", () => {
    expect(findObject(base, "Namespace", "ai-agents").metadata.labels).toEqual({
      "agents.re-cinq.com/system": "true",
      "pod-security.kubernetes.io/enforce": "baseline",
      "pod-security.kubernetes.io/warn": "restricted",
      "pod-security.kubernetes.io/audit": "restricted",
    });
  });

  it("gives the controller exactly the docs/deploy.md#rbac rules, namespaced, bound to its ServiceAccount", () => {
    expect(findObject(base, "Role", "agent-controller").rules).toEqual(CONTROLLER_RULES);
    const binding = findObject(base, "RoleBinding", "agent-controller");
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "agent-controller",
    });
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: "agent-controller", namespace: "ai-agents" },
    ]);
    expect(base.filter((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding")).toEqual([]);
  });

  it("grants no access to Secrets", () => {
    for (const role of base.filter((o) => o.kind === "Role" || o.kind === "ClusterRole")) {
      for (const rule of role.rules as Array<{ resources: string[] }>) {
        expect(rule.resources, `${role.metadata.name}`).not.toContain("secrets");
        expect(rule.resources).not.toContain("*");
      }
    }
  });

  it("gives callers create/get/list/watch/delete on agents and nothing else", () => {
    expect(findObject(base, "Role", "agent-launcher").rules).toEqual([
      {
        apiGroups: ["agents.re-cinq.com"],
        resources: ["agents"],
        verbs: ["create", "get", "list", "watch", "delete"],
      },
    ]);
    expect(findObject(base, "RoleBinding", "agent-launcher").subjects).toEqual([
      { kind: "ServiceAccount", name: "agent-launcher", namespace: "ai-agents" },
    ]);
  });

  it("runs two hardened controller replicas with the docs/controller.md#configuration environment", () => {
    const deployment = findObject(base, "Deployment", "agent-controller");
    expect(deployment.spec.replicas).toBe(2);
    const podLabels = { "agents.re-cinq.com/component": "controller" };
    expect(deployment.spec.selector.matchLabels).toEqual(podLabels);
    expect(deployment.spec.template.metadata.labels).toEqual(podLabels);
    expect(deployment.spec.template.metadata.annotations).toEqual({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "8081",
      "prometheus.io/path": "/metrics",
    });
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe("agent-controller");
    expect(pod.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });

    const c = controllerContainer(base);
    expect(c.image).toMatch(/^ghcr\.io\/re-cinq\/ai-agent-controller:v\d+\.\d+\.\d+$/);
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c.ports).toEqual([{ name: "health", containerPort: 8081, protocol: "TCP" }]);
    expect(c.livenessProbe).toEqual({
      httpGet: { path: "/healthz", port: "health" },
      initialDelaySeconds: 5,
      periodSeconds: 15,
    });
    expect(c.readinessProbe).toEqual({
      httpGet: { path: "/readyz", port: "health" },
      initialDelaySeconds: 3,
      periodSeconds: 10,
    });

    const env = envMap(base);
    expect(env.get("NAMESPACE")).toEqual({
      name: "NAMESPACE",
      valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
    });
    expect(env.get("POD_NAME")).toEqual({
      name: "POD_NAME",
      valueFrom: { fieldRef: { fieldPath: "metadata.name" } },
    });
    expect(env.get("HEALTH_PORT")?.value).toBe("8081");
    expect(env.get("MAX_OUTPUT_BYTES")?.value).toBe("262144");
    expect(env.get("AGENT_IMAGE")?.value).toMatch(/^ghcr\.io\/re-cinq\/ai-agent-run-pod:/);
    // The runtime flags (docs/controller.md#memory-what-the-rss-is-made-of): ones Node accepts in
    // NODE_OPTIONS, or the container would not start.
    const nodeOptions = env.get("NODE_OPTIONS")?.value ?? "";
    expect(nodeOptions).toBe("--max-semi-space-size=4");
    const started = spawnSync(process.execPath, ["-e", "0"], {
      env: { ...process.env, NODE_OPTIONS: nodeOptions },
      encoding: "utf8",
    });
    expect(started.stderr).toBe("");
    expect(started.status).toBe(0);
    // Off unless a component turns them on; the controller's default is false.
    expect(env.has("BATCH_ENABLED")).toBe(false);
    expect(env.has("REALTIME_ENABLED")).toBe(false);
    for (const e of env.values()) {
      if (e.value !== undefined) expect(typeof e.value, e.name).toBe("string");
    }
  });

  it("confines run pods: no ingress, egress to cluster DNS and public 80 and 443 only (spec.files may be http:// or https://)", () => {
    expect(findObject(base, "NetworkPolicy", "agent-job-egress").spec).toEqual({
      podSelector: { matchLabels: { "agents.re-cinq.com/component": "job" } },
      policyTypes: ["Ingress", "Egress"],
      egress: [
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
              podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
        {
          to: [
            {
              ipBlock: {
                cidr: "0.0.0.0/0",
                except: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"],
              },
            },
          ],
          ports: [
            { protocol: "TCP", port: 80 },
            { protocol: "TCP", port: 443 },
          ],
        },
      ],
    });
  });
});

/** Objects of `after` that are new or changed relative to `before`. */
function diff(before: K8sObject[], after: K8sObject[]): { added: K8sObject[]; changed: string[] } {
  const old = new Map(before.map((o) => [objectKey(o), o]));
  const added = after.filter((o) => !old.has(objectKey(o)));
  const changed = after
    .filter((o) => old.has(objectKey(o)) && JSON.stringify(old.get(objectKey(o))) !== JSON.stringify(o))
    .map(objectKey);
  return { added, changed };
}

describe("components/batch", () => {
  it("adds get on the agent-secrets Secret only, bound to the controller", () => {
    const { added, changed } = diff(base, withBatch);
    expect(added.map(objectKey).sort()).toEqual([
      "Role/ai-agents/agent-controller-batch",
      "RoleBinding/ai-agents/agent-controller-batch",
    ]);
    expect(findObject(withBatch, "Role", "agent-controller-batch").rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["agent-secrets"], verbs: ["get"] },
    ]);
    const binding = findObject(withBatch, "RoleBinding", "agent-controller-batch");
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "agent-controller-batch",
    });
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: "agent-controller", namespace: "ai-agents" },
    ]);
    expect(changed).toEqual(["Deployment/ai-agents/agent-controller"]);
  });

  it("sets BATCH_ENABLED=true and changes nothing else on the Deployment", () => {
    const env = envMap(withBatch);
    expect(env.get("BATCH_ENABLED")).toEqual({ name: "BATCH_ENABLED", value: "true" });
    const before = findObject(base, "Deployment", "agent-controller");
    const after = structuredClone(findObject(withBatch, "Deployment", "agent-controller"));
    const container = after.spec.template.spec.containers[0];
    container.env = (container.env as Env[]).filter((e) => e.name !== "BATCH_ENABLED");
    expect(after).toEqual(before);
  });
});

describe("components/realtime", () => {
  it("adds the prompt API Service on 8082 and the realtime ingress policy, and no RBAC", () => {
    const { added, changed } = diff(base, withRealtime);
    expect(added.map(objectKey).sort()).toEqual([
      "NetworkPolicy/ai-agents/agent-job-realtime-ingress",
      "Service/ai-agents/agent-controller-api",
    ]);
    expect(changed).toEqual(["Deployment/ai-agents/agent-controller"]);
    const service = findObject(withRealtime, "Service", "agent-controller-api");
    expect(service.spec.selector).toEqual({ "agents.re-cinq.com/component": "controller" });
    expect(service.spec.ports).toEqual([{ name: "api", port: 8082, targetPort: "api", protocol: "TCP" }]);
  });

  it("lets only controller pods reach a realtime run pod's port 8090", () => {
    expect(findObject(withRealtime, "NetworkPolicy", "agent-job-realtime-ingress").spec).toEqual({
      podSelector: {
        matchLabels: { "agents.re-cinq.com/component": "job", "agents.re-cinq.com/execution": "realtime" },
      },
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { "agents.re-cinq.com/component": "controller" } } }],
          ports: [{ protocol: "TCP", port: 8090 }],
        },
      ],
    });
  });

  it("enables realtime with the agent-realtime Secret keys as env and opens container port 8082", () => {
    const env = envMap(withRealtime);
    expect(env.get("REALTIME_ENABLED")).toEqual({ name: "REALTIME_ENABLED", value: "true" });
    expect(env.get("REALTIME_API_TOKEN")).toEqual({
      name: "REALTIME_API_TOKEN",
      valueFrom: { secretKeyRef: { name: "agent-realtime", key: "api-token" } },
    });
    expect(env.get("REALTIME_SIGNING_KEY")).toEqual({
      name: "REALTIME_SIGNING_KEY",
      valueFrom: { secretKeyRef: { name: "agent-realtime", key: "signing-key" } },
    });
    expect(env.has("BATCH_ENABLED")).toBe(false);
    const ports = controllerContainer(withRealtime).ports;
    expect(ports).toContainEqual({ name: "api", containerPort: 8082, protocol: "TCP" });
    expect(ports).toContainEqual({ name: "health", containerPort: 8081, protocol: "TCP" });
  });
});

describe("batch and realtime together", () => {
  it("compose: both sets of additions, both env switches, base env intact", () => {
    const { added } = diff(base, withBoth);
    expect(added.map(objectKey).sort()).toEqual([
      "NetworkPolicy/ai-agents/agent-job-realtime-ingress",
      "Role/ai-agents/agent-controller-batch",
      "RoleBinding/ai-agents/agent-controller-batch",
      "Service/ai-agents/agent-controller-api",
    ]);
    const env = envMap(withBoth);
    expect(env.get("BATCH_ENABLED")?.value).toBe("true");
    expect(env.get("REALTIME_ENABLED")?.value).toBe("true");
    for (const name of envMap(base).keys()) expect(env.has(name), name).toBe(true);
    expect(controllerContainer(withBoth).env.length).toBe(envMap(base).size + 4);
  });
});
