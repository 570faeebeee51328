/**
 * The Station template allowlist (docs/security.md#the-station-template-policy), one table per
 * rule: each attack the third hardening round showed (A1, A2, M4, L1, L2 in docs/security.md) refused naming
 * the field, what a Station legitimately needs still allowed, and the installation's widening.
 */
import { describe, expect, it } from "vitest";
import { AGENT_HOME, AGENT_RESULT_DIR, SECRET_NAME, WORKSPACE_DIR } from "../run-job/job.js";
import {
  DEFAULT_STATION_POLICY,
  RUN_DIRS,
  RUN_SECRET,
  type StationPolicy,
  stationTemplateProblem,
  withoutNulls,
} from "./station-policy.js";

const agent = { name: "agent", image: "node:22" };
const pod = (spec: Record<string, unknown>, containers: unknown[] = [agent]) => ({
  spec: { containers, ...spec },
});
const withAgent = (over: Record<string, unknown>) => pod({}, [{ ...agent, ...over }]);
const sidecar = (over: Record<string, unknown>) =>
  pod({}, [agent, { name: "side", image: "x", securityContext: { runAsUser: 1000 }, ...over }]);
const T = "spec.template.spec";
const C0 = `${T}.containers[0]`;
const widen = (p: Partial<StationPolicy>): StationPolicy => ({ ...DEFAULT_STATION_POLICY, ...p });
const allowlisted = (path: string, field: string) =>
  `${path} is not allowed: it is outside the Station template allowlist (docs/security.md#the-station-template-policy); an installation allows it with RUN_POD_FIELDS=${field}`;
const secretRefused = (path: string, name: string) =>
  `${path}: Secret "${name}" is not allowed: Station containers read only Secret agent-secrets unless the installation lists another in RUN_POD_SECRETS`;

type Row = [string, unknown, string | undefined, StationPolicy?];
const table = (rows: Row[]) =>
  it.each(rows)("%s", (_, template, want, policy) => {
    expect(stationTemplateProblem(template, policy)).toBe(want);
  });

describe("A2: nulls are dropped before anything is judged", () => {
  table([
    [
      "a null first key hides hostPath",
      pod({ volumes: [{ name: "host", emptyDir: null, hostPath: { path: "/" } }] }),
      "hostPath volume host is not allowed",
    ],
    [
      "a null first key hides a secret volume",
      pod({ volumes: [{ name: "s", emptyDir: null, secret: { secretName: "agent-realtime" } }] }),
      `${T}.volumes[0] (s): secret volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
    ],
    [
      "a null first key hides a projected token",
      pod({ volumes: [{ name: "p", configMap: null, projected: { sources: [] } }] }),
      `${T}.volumes[0] (p): projected volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
    ],
    ["a null field is no field (nodeName: null)", pod({ nodeName: null, dnsConfig: null }), undefined],
    [
      "a volume with only nulls is the API server's default emptyDir",
      pod({ volumes: [{ name: "e", emptyDir: null }] }),
      undefined,
    ],
  ]);
  it("drops nulls deep, keeps a __proto__ key a plain field", () => {
    const parsed = JSON.parse('{"a":{"b":null,"c":[{"d":null,"e":1}]},"__proto__":{"x":1}}');
    const out = withoutNulls(parsed) as Record<string, unknown>;
    expect(out).toEqual(JSON.parse('{"a":{"c":[{"e":1}]},"__proto__":{"x":1}}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe("every volume has exactly one source, of an allowed kind", () => {
  table([
    [
      "two sources",
      pod({ volumes: [{ name: "two", emptyDir: {}, configMap: { name: "c" } }] }),
      `${T}.volumes[0] (two): a volume has exactly one source, this one has 2 (emptyDir, configMap)`,
    ],
    [
      "gitRepo (git runs on the node)",
      pod({ volumes: [{ name: "g", gitRepo: { repository: "x" } }] }),
      "gitRepo volume g is not allowed",
    ],
    [
      "gitRepo even when the installation lists it",
      pod({ volumes: [{ name: "g", gitRepo: { repository: "x" } }] }),
      "gitRepo volume g is not allowed",
      widen({ volumeKinds: ["gitRepo"] }),
    ],
    [
      "an unknown source",
      pod({ volumes: [{ name: "u", hostDisk: {} }] }),
      `${T}.volumes[0] (u): hostDisk volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
    ],
    ["volumes that are not a list", pod({ volumes: { name: "x" } }), `${T}.volumes must be a list`],
    ["a volume that is not an object", pod({ volumes: ["hostPath"] }), `${T}.volumes[0] must be an object`],
  ]);
});

describe("M4: an ephemeral volume starts empty", () => {
  const eph = (spec: Record<string, unknown>) =>
    pod({ volumes: [{ name: "scratch", ephemeral: { volumeClaimTemplate: { spec } } }] });
  const refused = (field: string) =>
    `${T}.volumes[0] (scratch): ephemeral.volumeClaimTemplate.spec.${field} is not allowed: a run's ephemeral volume starts empty (no clone or binding of an existing volume); the installation allows any claim template with RUN_POD_VOLUME_KINDS=ephemeral`;
  table([
    [
      "dataSourceRef (a clone of any PVC)",
      eph({ dataSourceRef: { kind: "PersistentVolumeClaim", name: "db" } }),
      refused("dataSourceRef"),
    ],
    [
      "dataSource (a snapshot)",
      eph({ dataSource: { kind: "PersistentVolumeClaim", name: "db" } }),
      refused("dataSource"),
    ],
    ["volumeName (a named PV)", eph({ volumeName: "pv-team-b" }), refused("volumeName")],
    [
      "selector (an existing PV by its labels)",
      eph({ selector: { matchLabels: { team: "b" } } }),
      refused("selector"),
    ],
    [
      "a new volume of a size and class",
      eph({
        accessModes: ["ReadWriteOnce"],
        storageClassName: "fast",
        resources: { requests: { storage: "1Gi" } },
      }),
      undefined,
    ],
    [
      "any claim when the installation allows ephemeral outright",
      eph({ dataSourceRef: { name: "db" } }),
      undefined,
      widen({ volumeKinds: ["ephemeral"] }),
    ],
  ]);
});

describe("A widened secret or projected volume names only the Secrets env may read", () => {
  const vol = (v: Record<string, unknown>) => pod({ volumes: [{ name: "s", ...v }] });
  const secretKind = widen({ volumeKinds: ["secret", "projected"] });
  table([
    [
      "a secret volume of agent-realtime",
      vol({ secret: { secretName: "agent-realtime" } }),
      secretRefused(`${T}.volumes[0] (s).secret.secretName`, "agent-realtime"),
      secretKind,
    ],
    [
      "a projected volume with the admission TLS Secret among its sources",
      vol({
        projected: {
          sources: [{ configMap: { name: "c" } }, { secret: { name: "agent-controller-admission-tls" } }],
        },
      }),
      secretRefused(`${T}.volumes[0] (s).projected.sources[1].secret.name`, "agent-controller-admission-tls"),
      secretKind,
    ],
    [
      "a secret volume of agent-secrets",
      vol({ secret: { secretName: "agent-secrets" } }),
      undefined,
      secretKind,
    ],
    [
      "a secret volume of a Secret the installation lists",
      vol({ secret: { secretName: "team-ca" } }),
      undefined,
      widen({ volumeKinds: ["secret"], secrets: ["team-ca"] }),
    ],
  ]);
});

describe("A1: a container's env reads no Secret but agent-secrets", () => {
  const keyRef = (name: string) => ({
    env: [{ name: "K", valueFrom: { secretKeyRef: { name, key: "signing-key" } } }],
  });
  table([
    [
      "secretKeyRef to agent-realtime in the agent container",
      withAgent(keyRef("agent-realtime")),
      secretRefused(`${C0}.env[0].valueFrom.secretKeyRef`, "agent-realtime"),
    ],
    [
      "secretKeyRef in a sidecar",
      sidecar(keyRef("agent-realtime")),
      secretRefused(`${T}.containers[1].env[0].valueFrom.secretKeyRef`, "agent-realtime"),
    ],
    [
      "secretKeyRef in an init container",
      pod({ initContainers: [{ name: "i", image: "x", ...keyRef("agent-controller-admission-tls") }] }),
      secretRefused(`${T}.initContainers[0].env[0].valueFrom.secretKeyRef`, "agent-controller-admission-tls"),
    ],
    [
      "envFrom secretRef",
      withAgent({ envFrom: [{ secretRef: { name: "agent-realtime" } }] }),
      secretRefused(`${C0}.envFrom[0].secretRef`, "agent-realtime"),
    ],
    [
      "a secretKeyRef without a name",
      withAgent({ env: [{ name: "K", valueFrom: { secretKeyRef: { key: "k" } } }] }),
      secretRefused(`${C0}.env[0].valueFrom.secretKeyRef`, ""),
    ],
    [
      "an env source the allowlist does not know",
      withAgent({
        env: [{ name: "K", valueFrom: { fileKeyRef: { volumeName: "v", path: "p", key: "k" } } }],
      }),
      `${C0}.env[0].valueFrom.fileKeyRef is not allowed: it is not a field the Station template allowlist knows (docs/security.md#the-station-template-policy)`,
    ],
    ["env that is not a list", withAgent({ env: { name: "K" } }), `${C0}.env must be a list`],
    ["agent-secrets, any key", withAgent(keyRef("agent-secrets")), undefined],
    [
      "envFrom agent-secrets and a ConfigMap",
      withAgent({
        envFrom: [{ secretRef: { name: "agent-secrets" } }, { configMapRef: { name: "c" }, prefix: "C_" }],
      }),
      undefined,
    ],
    [
      "configMapKeyRef, fieldRef and resourceFieldRef",
      withAgent({
        env: [
          { name: "A", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } },
          { name: "B", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          { name: "C", valueFrom: { resourceFieldRef: { resource: "limits.memory" } } },
          { name: "D", value: "plain" },
        ],
      }),
      undefined,
    ],
    [
      "a Secret the installation lists",
      sidecar({ envFrom: [{ secretRef: { name: "proxy-auth" } }] }),
      undefined,
      widen({ secrets: ["proxy-auth"] }),
    ],
  ]);
  it("names the Secret the Job builder injects", () => {
    expect(RUN_SECRET).toBe(SECRET_NAME);
  });
});

describe("L1: pod-level fields outside the allowlist", () => {
  const refused = (field: string) => allowlisted(`${T}.${field}`, field);
  table([
    ["nodeName", pod({ nodeName: "control-plane-0" }), refused("nodeName")],
    ["priorityClassName", pod({ priorityClassName: "system-node-critical" }), refused("priorityClassName")],
    ["runtimeClassName", pod({ runtimeClassName: "unconfined" }), refused("runtimeClassName")],
    [
      "hostAliases",
      pod({ hostAliases: [{ ip: "10.0.0.9", hostnames: ["api.github.com"] }] }),
      refused("hostAliases"),
    ],
    ["dnsConfig", pod({ dnsConfig: { nameservers: ["10.0.0.9"] } }), refused("dnsConfig")],
    [
      "dnsPolicy None",
      pod({ dnsPolicy: "None" }),
      `${T}.dnsPolicy "None" is not allowed: only ClusterFirst or Default; an installation allows others with RUN_POD_FIELDS=dnsPolicy`,
    ],
    [
      "imagePullSecrets",
      pod({ imagePullSecrets: [{ name: "team-b-registry" }] }),
      refused("imagePullSecrets"),
    ],
    ["schedulerName", pod({ schedulerName: "mine" }), refused("schedulerName")],
    ["hostUsers", pod({ hostUsers: true }), refused("hostUsers")],
    [
      "a field no pod spec has",
      pod({ nodeNmae: "x" }),
      `${T}.nodeNmae is not allowed: it is not a field the Station template allowlist knows (docs/security.md#the-station-template-policy)`,
    ],
    [
      "a toleration of every taint (Exists without a key)",
      pod({ tolerations: [{ operator: "Exists" }] }),
      `${T}.tolerations[0] is not allowed: a toleration without a key tolerates every taint of every node; name the taint's key, or an installation allows any toleration with RUN_POD_FIELDS=tolerations`,
    ],
    [
      "a toleration of the control plane's taint",
      pod({
        tolerations: [
          { key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" },
        ],
      }),
      `${T}.tolerations[0].key "node-role.kubernetes.io/control-plane" is not allowed: it is a taint Kubernetes sets (the control plane, a node's condition); an installation allows any toleration with RUN_POD_FIELDS=tolerations`,
    ],
    [
      "AppArmor unconfined through the annotation",
      {
        metadata: { annotations: { "container.apparmor.security.beta.kubernetes.io/agent": "unconfined" } },
        spec: { containers: [agent] },
      },
      `spec.template.metadata.annotations["container.apparmor.security.beta.kubernetes.io/agent"] "unconfined" is not allowed: only runtime/default; an installation allows others with RUN_POD_FIELDS=appArmorProfile`,
    ],
    [
      "seccomp unconfined through the annotation",
      {
        metadata: { annotations: { "seccomp.security.alpha.kubernetes.io/pod": "unconfined" } },
        spec: { containers: [agent] },
      },
      `spec.template.metadata.annotations["seccomp.security.alpha.kubernetes.io/pod"] "unconfined" is not allowed: the controller gives every container the RuntimeDefault seccomp profile`,
    ],
  ]);
  table([
    [
      "scheduling a Station legitimately needs",
      pod({
        nodeSelector: { pool: "agents" },
        affinity: { nodeAffinity: {} },
        topologySpreadConstraints: [],
        tolerations: [
          { key: "dedicated", operator: "Equal", value: "agents", effect: "NoSchedule" },
          { key: "gpu", operator: "Exists" },
        ],
        terminationGracePeriodSeconds: 30,
        dnsPolicy: "ClusterFirst",
      }),
      undefined,
    ],
    [
      "fields the controller replaces",
      pod({ securityContext: { fsGroup: 5 }, restartPolicy: "Always", automountServiceAccountToken: true }),
      undefined,
    ],
    [
      "nodeName and priorityClassName when the installation allows them",
      pod({ nodeName: "n", priorityClassName: "p" }),
      undefined,
      widen({ fields: ["nodeName", "priorityClassName"] }),
    ],
    [
      "any toleration when the installation allows it",
      pod({ tolerations: [{ operator: "Exists" }] }),
      undefined,
      widen({ fields: ["tolerations"] }),
    ],
    [
      "dnsPolicy None with a dnsConfig when allowed",
      pod({ dnsPolicy: "None", dnsConfig: { nameservers: ["1.1.1.1"] } }),
      undefined,
      widen({ fields: ["dnsPolicy", "dnsConfig"] }),
    ],
    [
      "AppArmor runtime/default annotations",
      {
        metadata: {
          annotations: { "container.apparmor.security.beta.kubernetes.io/agent": "runtime/default" },
        },
        spec: { containers: [agent] },
      },
      undefined,
    ],
  ]);
});

describe("L1: container fields, host ports and confinement", () => {
  table([
    [
      "hostPort",
      withAgent({ ports: [{ containerPort: 80, hostPort: 80 }] }),
      allowlisted(`${C0}.ports[0].hostPort`, "hostPort"),
    ],
    [
      "hostIP",
      sidecar({ ports: [{ containerPort: 80, hostIP: "0.0.0.0" }] }),
      allowlisted(`${T}.containers[1].ports[0].hostIP`, "hostIP"),
    ],
    [
      "SELinux spc_t",
      withAgent({ securityContext: { seLinuxOptions: { type: "spc_t" } } }),
      allowlisted(`${C0}.securityContext.seLinuxOptions`, "seLinuxOptions"),
    ],
    [
      "AppArmor Unconfined",
      sidecar({ securityContext: { runAsUser: 1000, appArmorProfile: { type: "Unconfined" } } }),
      `${T}.containers[1].securityContext.appArmorProfile "Unconfined" is not allowed: only RuntimeDefault; an installation allows others with RUN_POD_FIELDS=appArmorProfile`,
    ],
    [
      "a container field no container has",
      withAgent({ volumeMountz: [] }),
      `${C0}.volumeMountz is not allowed: it is not a field the Station template allowlist knows (docs/security.md#the-station-template-policy)`,
    ],
    [
      "a securityContext that is not an object",
      withAgent({ securityContext: "privileged" }),
      `${C0}.securityContext must be an object`,
    ],
    ["containers that are not objects", pod({}, [agent, "x"]), `${T}.containers[1] must be an object`],
    [
      "a containerPort, AppArmor RuntimeDefault, a read-only root",
      withAgent({
        ports: [{ containerPort: 80 }],
        securityContext: { readOnlyRootFilesystem: true, appArmorProfile: { type: "RuntimeDefault" } },
      }),
      undefined,
    ],
    [
      "hostPort and SELinux when the installation allows them",
      withAgent({
        ports: [{ containerPort: 80, hostPort: 80 }],
        securityContext: { seLinuxOptions: { level: "s0:c1" } },
      }),
      undefined,
      widen({ fields: ["hostPort", "seLinuxOptions"] }),
    ],
  ]);
});

describe("L2: no Station mount over the agent container's run directories", () => {
  const mount = (mountPath: string, name = "cache") =>
    pod({ volumes: [{ name: "cache", emptyDir: {} }] }, [{ ...agent, volumeMounts: [{ name, mountPath }] }]);
  const refused = (field: string, value: string, dir: string) =>
    `${C0}.${field} "${value}" is not allowed: the agent container's ${dir} is the controller's (the witness, the workspace, the run's result)`;
  table([
    [
      "/agent/bin (over the witness)",
      mount("/agent/bin"),
      refused("volumeMounts[0].mountPath", "/agent/bin", "/agent"),
    ],
    ["/agent itself", mount("/agent"), refused("volumeMounts[0].mountPath", "/agent", "/agent")],
    [
      "/workspace/sub",
      mount("/workspace/sub"),
      refused("volumeMounts[0].mountPath", "/workspace/sub", "/workspace"),
    ],
    [
      "the result directory",
      mount("/run/ai-agent-result"),
      refused("volumeMounts[0].mountPath", "/run/ai-agent-result", "/run/ai-agent-result"),
    ],
    [
      "a path that only normalises into /agent",
      mount("/tmp/../agent//bin/"),
      refused("volumeMounts[0].mountPath", "/tmp/../agent//bin/", "/agent"),
    ],
    ["the root", mount("/"), refused("volumeMounts[0].mountPath", "/", "root")],
    [
      "a device over the witness",
      withAgent({ volumeDevices: [{ name: "cache", devicePath: "/agent/bin/ai-agent-witness" }] }),
      refused("volumeDevices[0].devicePath", "/agent/bin/ai-agent-witness", "/agent"),
    ],
    [
      "the termination message file over the witness",
      withAgent({ terminationMessagePath: "/agent/bin/ai-agent-witness" }),
      refused("terminationMessagePath", "/agent/bin/ai-agent-witness", "/agent"),
    ],
    ["/agentx is not /agent", mount("/agentx"), undefined],
    ["/run/cache, beside the result directory", mount("/run/cache"), undefined],
    ["a mount named like a run volume (the builder replaces it)", mount("/agent/bin", "agent"), undefined],
    [
      "a sidecar's own /workspace",
      pod({ volumes: [{ name: "cache", emptyDir: {} }] }, [
        agent,
        { name: "side", image: "x", volumeMounts: [{ name: "cache", mountPath: "/workspace" }] },
      ]),
      undefined,
    ],
  ]);
  it("knows the Job builder's directories", () => {
    expect(RUN_DIRS).toEqual([AGENT_HOME, WORKSPACE_DIR, AGENT_RESULT_DIR]);
  });
});
