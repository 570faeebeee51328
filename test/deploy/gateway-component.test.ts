/**
 * components/gateway (docs/gateway.md#installing), rendered with `kubectl kustomize` the way
 * docs/install.md installs it: the gateway's own objects, hardened; the controller told where the
 * gateway is and given the key; the NetworkPolicies; and nothing of it without the component.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseGatewayConfig } from "../../src/gateway/config.js";
import { CONTROLLER_IMAGE } from "../../src/version.js";
import { execForm, parseStages } from "./dockerfile.js";
import { isBuiltin, valueImportGraph } from "./imports.js";
import { findObject, type K8sObject, objectKey, REPO_ROOT, renderInstall } from "./render.js";

const GATEWAY = { "agents.re-cinq.com/component": "gateway" };

interface Env {
  name: string;
  value?: string;
  valueFrom?: unknown;
}
interface Port {
  name: string;
  containerPort: number;
  protocol: string;
}
interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env: Env[];
  ports: Port[];
  volumeMounts: Mount[];
  // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
  [field: string]: any;
}
interface SecretVolume {
  name: string;
  secret?: {
    secretName: string;
    optional?: boolean;
    items?: { key: string; path: string }[];
    defaultMode?: number;
  };
}

let base: K8sObject[];
let withGateway: K8sObject[];
let withMonitoring: K8sObject[];

beforeAll(async () => {
  [base, withGateway, withMonitoring] = await Promise.all([
    renderInstall([]),
    renderInstall(["gateway"]),
    renderInstall(["gateway", "monitoring"]),
  ]);
}, 120_000);

function onlyContainer(deployment: K8sObject): Container {
  const containers = deployment.spec.template.spec.containers as Container[];
  expect(containers).toHaveLength(1);
  return containers[0] as Container;
}

function envValue(container: Container, name: string): string {
  const found = container.env.find((e) => e.name === name);
  if (found?.value === undefined) throw new Error(`${container.name} has no literal env ${name}`);
  return found.value;
}

/** The Secret volume mounted at the directory holding `file`, and the file's name in it. */
function secretFileAt(deployment: K8sObject, container: Container, file: string) {
  const mount = container.volumeMounts.find((m) => file.startsWith(`${m.mountPath}/`));
  if (mount === undefined) throw new Error(`no volume mounted above ${file}`);
  const volume = (deployment.spec.template.spec.volumes as SecretVolume[]).find((v) => v.name === mount.name);
  return { mount, volume, path: file.slice(mount.mountPath.length + 1) };
}

describe("without components/gateway", () => {
  it("renders no gateway object and leaves the controller without the gateway's variables and key", () => {
    const gatewayish = base.filter(
      (o) =>
        o.metadata.name.includes("gateway") ||
        o.metadata.labels?.["agents.re-cinq.com/component"] === "gateway" ||
        JSON.stringify(o.spec ?? {}).includes('"agents.re-cinq.com/component":"gateway"'),
    );
    expect(gatewayish.map(objectKey)).toEqual([]);
    const volumes = findObject(base, "Deployment", "agent-controller").spec.template.spec
      .volumes as SecretVolume[];
    expect(volumes.map((v) => v.secret?.secretName).filter((s) => s !== undefined)).toEqual([]);
    const env = onlyContainer(findObject(base, "Deployment", "agent-controller")).env.map((e) => e.name);
    expect(env).not.toContain("AGENT_GATEWAY_URL");
    expect(env).not.toContain("AGENT_GATEWAY_CREDENTIAL_KEY_FILE");
  });
});

describe("components/gateway", () => {
  it("adds the gateway's Deployment, Service, ServiceAccount, Role, PDB and NetworkPolicies, and changes only the controller Deployment and the run pods' egress", () => {
    const before = new Map(base.map((o) => [objectKey(o), JSON.stringify(o)]));
    const added = withGateway.filter((o) => !before.has(objectKey(o)));
    expect(added.map(objectKey).sort()).toEqual([
      "Deployment/ai-agents/agent-gateway",
      "NetworkPolicy/ai-agents/agent-gateway",
      "NetworkPolicy/ai-agents/agent-job-gateway-egress",
      "PodDisruptionBudget/ai-agents/agent-gateway",
      "Role/ai-agents/agent-gateway",
      "RoleBinding/ai-agents/agent-gateway",
      "Service/ai-agents/agent-gateway",
      "ServiceAccount/ai-agents/agent-gateway",
    ]);
    for (const o of added) expect(o.metadata.labels, objectKey(o)).toEqual(GATEWAY);
    const changed = withGateway
      .filter((o) => before.has(objectKey(o)) && before.get(objectKey(o)) !== JSON.stringify(o))
      .map(objectKey);
    expect(changed.sort()).toEqual([
      "Deployment/ai-agents/agent-controller",
      "NetworkPolicy/ai-agents/agent-job-egress",
    ]);
  });

  it("runs two hardened replicas of the controller image, spread over nodes, with the ServiceAccount's token in its own pods only", () => {
    const deployment = findObject(withGateway, "Deployment", "agent-gateway");
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.selector.matchLabels).toEqual(GATEWAY);
    expect(deployment.spec.template.metadata.labels).toEqual(GATEWAY);
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe("agent-gateway");
    // GATEWAY_MODE=cluster reads Agents, Stations and AgentDefinitions with it.
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(findObject(withGateway, "ServiceAccount", "agent-gateway").automountServiceAccountToken).toBe(
      false,
    );
    expect(pod.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution).toEqual([
      {
        weight: 100,
        podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: GATEWAY } },
      },
    ]);
    const c = onlyContainer(deployment);
    expect(c.image).toBe(CONTROLLER_IMAGE);
    expect(c.image).toBe(onlyContainer(findObject(withGateway, "Deployment", "agent-controller")).image);
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    for (const kind of ["requests", "limits"]) {
      expect(Object.keys(c.resources[kind]).sort(), kind).toEqual(["cpu", "memory"]);
    }
    // The gateway's own close (30 s) fits between preStop and the kill.
    expect(c.lifecycle.preStop.exec.command).toEqual(["sleep", "5"]);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(5 + 30);
  });

  it("starts the compiled src/gateway/main.ts in the image's working directory, which needs only production dependencies", () => {
    const argv = onlyContainer(findObject(withGateway, "Deployment", "agent-gateway")).command ?? [];
    expect(argv.slice(0, -1)).toEqual(["node", "--enable-source-maps"]);
    const build = JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.build.json"), "utf8")) as {
      compilerOptions: { outDir: string; rootDir: string };
      include: string[];
    };
    expect(build.compilerOptions.rootDir).toBe(".");
    const source = relative(build.compilerOptions.outDir, argv.at(-1) ?? "").replace(/\.js$/, ".ts");
    expect(source).toBe("src/gateway/main.ts");
    // The runtime stage (the controller image) runs in /app, where dist/ is copied.
    const runtime = parseStages(readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8")).at(-1);
    const workdir = runtime?.instructions.filter((i) => i.keyword === "WORKDIR").at(-1)?.args;
    expect(workdir).toBe("/app");
    const copies = runtime?.instructions.filter((i) => i.keyword === "COPY").map((i) => i.args) ?? [];
    expect(copies).toContain(
      `--from=build /app/${build.compilerOptions.outDir} ./${build.compilerOptions.outDir}`,
    );
    expect(execForm(runtime?.instructions.find((i) => i.keyword === "ENTRYPOINT")?.args ?? "")?.[0]).toBe(
      "node",
    );

    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const graph = valueImportGraph(join(REPO_ROOT, source));
    expect(graph.files.length).toBeGreaterThan(1);
    for (const specifier of graph.packages.filter((p) => !isBuiltin(p))) {
      expect(Object.keys(pkg.dependencies), `${specifier} is imported at run time`).toContain(specifier);
    }
    for (const file of graph.files) {
      const rel = relative(REPO_ROOT, file);
      expect(rel).not.toMatch(/\.test\.ts$/);
      expect(
        build.include.some((dir) => rel.startsWith(`${dir}/`)),
        rel,
      ).toBe(true);
    }
  });

  it("sets an environment the gateway accepts in cluster mode, serving its own namespace, its ports the container's, probed on /healthz of the metrics port", () => {
    const deployment = findObject(withGateway, "Deployment", "agent-gateway");
    const c = onlyContainer(deployment);
    // The namespace comes from the pod itself, so an overlay that moves the install moves it too.
    const namespace = c.env.find((e) => e.name === "GATEWAY_NAMESPACE");
    expect(namespace).toEqual({
      name: "GATEWAY_NAMESPACE",
      valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
    });
    for (const e of c.env.filter((e) => e !== namespace)) {
      expect(e.value, `${e.name} is a literal`).toBeTypeOf("string");
    }
    const config = parseGatewayConfig({
      ...Object.fromEntries(c.env.map((e) => [e.name, e.value])),
      GATEWAY_NAMESPACE: deployment.metadata.namespace,
    });
    expect(config.runs).toEqual({
      mode: "cluster",
      namespace: "ai-agents",
      agentSecretsDir: envValue(c, "GATEWAY_AGENT_SECRETS_DIR"),
    });
    expect(c.ports).toEqual([
      { name: "api", containerPort: config.port, protocol: "TCP" },
      { name: "metrics", containerPort: config.metricsPort, protocol: "TCP" },
      { name: "egress", containerPort: config.egressPort, protocol: "TCP" },
    ]);
    expect(config.port).toBe(8080);
    expect(config.egressPort).toBe(3128);
    expect(config.metricsPort).toBe(9090);
    const probe = { httpGet: { path: "/healthz", port: "metrics" } };
    expect(c.livenessProbe).toMatchObject(probe);
    expect(c.readinessProbe).toMatchObject(probe);
    expect(deployment.spec.template.metadata.annotations).toEqual({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": String(config.metricsPort),
      "prometheus.io/path": "/metrics",
    });
  });

  it("mounts the credential key from agent-gateway and agent-secrets whole, read-only, where the gateway reads them", () => {
    const deployment = findObject(withGateway, "Deployment", "agent-gateway");
    const c = onlyContainer(deployment);
    const key = secretFileAt(deployment, c, envValue(c, "GATEWAY_CREDENTIAL_KEY_FILE"));
    expect(key.mount.readOnly).toBe(true);
    expect(key.volume?.secret).toEqual({
      secretName: "agent-gateway",
      items: [{ key: "credential-key", path: key.path }],
      defaultMode: 0o440,
    });

    const dir = envValue(c, "GATEWAY_AGENT_SECRETS_DIR");
    const keysMount = c.volumeMounts.find((m) => m.mountPath === dir);
    expect(keysMount?.readOnly).toBe(true);
    const keys = (deployment.spec.template.spec.volumes as SecretVolume[]).find(
      (v) => v.name === keysMount?.name,
    )?.secret;
    // Every key, each under its own name: the entry a definition names is not known in advance.
    // Optional: a missing entry is a per-request refusal, not a pod that cannot start.
    expect(keys).toEqual({ secretName: "agent-secrets", optional: true, defaultMode: 0o440 });
    // No other Secret, and no Secret read through the API (the Role below has none).
    const secrets = (deployment.spec.template.spec.volumes as SecretVolume[]).flatMap((v) =>
      v.secret ? [v.secret.secretName] : [],
    );
    expect(secrets.sort()).toEqual(["agent-gateway", "agent-secrets"]);
  });

  it("may get Agents, Stations and AgentDefinitions of its namespace, write and list usage records and create Events, nothing else: no other list, no other write, no status, no Secret", () => {
    expect(findObject(withGateway, "Role", "agent-gateway").rules).toEqual([
      {
        apiGroups: ["agents.re-cinq.com"],
        resources: ["agents", "stations", "agentdefinitions"],
        verbs: ["get"],
      },
      {
        apiGroups: ["agents.re-cinq.com"],
        resources: ["modelusages"],
        verbs: ["create", "get", "list", "update"],
      },
      { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create"] },
    ]);
    const binding = findObject(withGateway, "RoleBinding", "agent-gateway");
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "agent-gateway",
    });
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: "agent-gateway", namespace: "ai-agents" },
    ]);
    // Nothing else binds the gateway's ServiceAccount, and no ClusterRole comes with the component.
    const bindings = withGateway.filter(
      (o) =>
        (o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding") &&
        JSON.stringify(o.subjects ?? []).includes('"name":"agent-gateway"'),
    );
    expect(bindings.map(objectKey)).toEqual(["RoleBinding/ai-agents/agent-gateway"]);
    expect(withGateway.filter((o) => o.kind === "ClusterRole").map(objectKey)).toEqual(
      base.filter((o) => o.kind === "ClusterRole").map(objectKey),
    );
  });

  it("keeps one replica through a voluntary disruption", () => {
    expect(findObject(withGateway, "PodDisruptionBudget", "agent-gateway").spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: GATEWAY },
    });
  });

  it("gives the controller AGENT_GATEWAY_URL and AGENT_GATEWAY_EGRESS_URL (the Service's two ports) and AGENT_GATEWAY_CREDENTIAL_KEY_FILE (the same Secret key), nothing else changed", () => {
    const controller = findObject(withGateway, "Deployment", "agent-controller");
    const c = onlyContainer(controller);
    const service = findObject(withGateway, "Service", "agent-gateway");
    expect(service.spec.selector).toEqual(GATEWAY);
    expect(service.spec.ports).toEqual([
      { name: "api", port: 8080, targetPort: "api", protocol: "TCP" },
      { name: "egress", port: 3128, targetPort: "egress", protocol: "TCP" },
    ]);
    const host = `${service.metadata.name}.${service.metadata.namespace}.svc`;
    expect(envValue(c, "AGENT_GATEWAY_URL")).toBe(`http://${host}:${service.spec.ports[0].port}`);
    expect(envValue(c, "AGENT_GATEWAY_EGRESS_URL")).toBe(`http://${host}:${service.spec.ports[1].port}`);
    const key = secretFileAt(controller, c, envValue(c, "AGENT_GATEWAY_CREDENTIAL_KEY_FILE"));
    expect(key.mount.readOnly).toBe(true);
    expect(key.volume?.secret).toEqual({
      secretName: "agent-gateway",
      items: [{ key: "credential-key", path: key.path }],
      defaultMode: 0o440,
    });

    const before = findObject(base, "Deployment", "agent-controller");
    const after = structuredClone(controller);
    const pod = after.spec.template.spec;
    pod.volumes = (pod.volumes as SecretVolume[]).filter((v) => v.name !== key.volume?.name);
    const container = pod.containers[0] as Container;
    container.env = container.env.filter((e) => !e.name.startsWith("AGENT_GATEWAY_"));
    container.volumeMounts = container.volumeMounts.filter((m) => m.name !== key.mount.name);
    expect(after).toEqual(before);
  });

  it("lets only run pods reach the API and egress ports, anyone the metrics port, and the gateway DNS, public 80 and 443 and the Kubernetes API only", () => {
    const runPods = findObject(base, "NetworkPolicy", "agent-job-egress").spec.podSelector;
    const policy = findObject(withGateway, "NetworkPolicy", "agent-gateway").spec;
    expect(policy.podSelector).toEqual({ matchLabels: GATEWAY });
    expect(policy.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(policy.ingress).toEqual([
      {
        from: [{ podSelector: runPods }],
        ports: [
          { protocol: "TCP", port: "api" },
          { protocol: "TCP", port: "egress" },
        ],
      },
      { ports: [{ protocol: "TCP", port: "metrics" }] },
    ]);
    // The named ports are the gateway container's.
    const names = onlyContainer(findObject(withGateway, "Deployment", "agent-gateway")).ports.map(
      (p) => p.name,
    );
    expect(names).toEqual(expect.arrayContaining(["api", "metrics", "egress"]));
    expect(policy.egress).toEqual([
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
      // The API server's own address differs per cluster (and is what engines see after the
      // kubernetes Service's translation): its two usual ports, anywhere.
      {
        to: [{ ipBlock: { cidr: "0.0.0.0/0" } }],
        ports: [
          { protocol: "TCP", port: 443 },
          { protocol: "TCP", port: 6443 },
        ],
      },
    ]);
  });

  it("keeps run pods to DNS and the gateway's API and egress ports: the base's public 80/443 rule is gone, and no controller pod is selected", () => {
    const basePolicy = findObject(base, "NetworkPolicy", "agent-job-egress").spec;
    const runPods = basePolicy.podSelector;
    const ports = onlyContainer(findObject(withGateway, "Deployment", "agent-gateway")).ports;
    const port = (name: string) => ports.find((p) => p.name === name)?.containerPort;
    expect(findObject(withGateway, "NetworkPolicy", "agent-job-gateway-egress").spec).toEqual({
      podSelector: runPods,
      policyTypes: ["Egress"],
      egress: [
        {
          to: [{ podSelector: { matchLabels: GATEWAY } }],
          ports: [
            { protocol: "TCP", port: port("api") },
            { protocol: "TCP", port: port("egress") },
          ],
        },
      ],
    });
    // The base policy keeps its DNS rule, ingress closed, and loses exactly the public rule.
    const narrowed = findObject(withGateway, "NetworkPolicy", "agent-job-egress").spec;
    const publicRule = basePolicy.egress.find((r: { to: { ipBlock?: unknown }[] }) =>
      r.to.some((t) => t.ipBlock !== undefined),
    );
    expect(publicRule).toBeDefined();
    expect(narrowed).toEqual({
      ...basePolicy,
      egress: basePolicy.egress.filter((r: unknown) => r !== publicRule),
    });
    expect(JSON.stringify(narrowed)).not.toContain("ipBlock");
    // The controller's egress stays open (batch calls the providers itself, docs/gateway.md#batch-runs-stay-direct).
    const selectors = withGateway
      .filter(
        (o) =>
          o.kind === "NetworkPolicy" && o.metadata.labels?.["agents.re-cinq.com/component"] === "gateway",
      )
      .map((o) => o.spec.podSelector.matchLabels["agents.re-cinq.com/component"]);
    expect(selectors.sort()).toEqual(["gateway", "job"]);
  });

  it("is scraped by components/monitoring's PodMonitor agent-gateway on the container's metrics port", () => {
    const monitor = findObject(withMonitoring, "PodMonitor", "agent-gateway");
    const deployment = findObject(withMonitoring, "Deployment", "agent-gateway");
    expect(monitor.spec.selector).toEqual({ matchLabels: deployment.spec.template.metadata.labels });
    const metrics = onlyContainer(deployment).ports.find(
      (p) => p.name === monitor.spec.podMetricsEndpoints[0].port,
    );
    expect(metrics?.containerPort).toBe(9090);
    expect(monitor.spec.podMetricsEndpoints[0].path).toBe("/metrics");
  });
});
