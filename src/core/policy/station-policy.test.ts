/**
 * The Station template policy (docs/security.md#the-station-template-policy): one row per attack
 * a Station's author was shown to have, each refused naming the field, and what stays allowed.
 */
import { describe, expect, it } from "vitest";
import { RESULT_VOLUME } from "../run-job/job.js";
import { RUN_VOLUME_NAMES, type StationPolicy, stationTemplateProblem } from "./station-policy.js";

const agent = { name: "agent", image: "node:22" };
const pod = (spec: Record<string, unknown>, containers: unknown[] = [agent]) => ({
  spec: { containers, ...spec },
});
const T = "spec.template.spec";

type Row = [string, unknown, string | undefined, StationPolicy?];

const attacks: Row[] = [
  [
    "the controller's ServiceAccount",
    pod({ serviceAccountName: "agent-controller" }),
    `${T}.serviceAccountName "agent-controller" is not allowed: the run pod runs as the namespace's default ServiceAccount unless the installation lists another in RUN_POD_SERVICE_ACCOUNTS`,
  ],
  [
    "the deprecated serviceAccount alias",
    pod({ serviceAccount: "agent-controller" }),
    `${T}.serviceAccount "agent-controller" is not allowed: the run pod runs as the namespace's default ServiceAccount unless the installation lists another in RUN_POD_SERVICE_ACCOUNTS`,
  ],
  [
    "a projected ServiceAccount token",
    pod({
      automountServiceAccountToken: false,
      volumes: [{ name: "tok", projected: { sources: [{ serviceAccountToken: { path: "t" } }] } }],
    }),
    `${T}.volumes[0] (tok): projected volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
  ],
  [
    "the agent-secrets Secret mounted whole",
    pod({
      volumes: [
        { name: "cache", emptyDir: {} },
        { name: "s", secret: { secretName: "agent-secrets" } },
      ],
    }),
    `${T}.volumes[1] (s): secret volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
  ],
  [
    "a CSI volume",
    pod({ volumes: [{ name: "c", csi: { driver: "secrets-store.csi.k8s.io" } }] }),
    `${T}.volumes[0] (c): csi volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
  ],
  [
    "another team's PersistentVolumeClaim",
    pod({ volumes: [{ name: "p", persistentVolumeClaim: { claimName: "x" } }] }),
    `${T}.volumes[0] (p): persistentVolumeClaim volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`,
  ],
  [
    "hostPath",
    pod({ volumes: [{ name: "h", hostPath: { path: "/" } }] }),
    "hostPath volume h is not allowed",
  ],
  [
    "hostPath even when the installation lists it",
    pod({ volumes: [{ name: "h", hostPath: { path: "/" } }] }),
    "hostPath volume h is not allowed",
    { serviceAccounts: [], volumeKinds: ["hostPath"] },
  ],
  [
    "shareProcessNamespace",
    pod({ shareProcessNamespace: true }),
    `${T}.shareProcessNamespace is not allowed: the agent could read the other containers' environment (the courier's token)`,
  ],
  ["hostNetwork", pod({ hostNetwork: true }), "hostNetwork is not allowed"],
  ["hostPID", pod({ hostPID: true }), "hostPID is not allowed"],
  ["hostIPC", pod({ hostIPC: true }), "hostIPC is not allowed"],
  [
    "a sidecar mounting the witness's result volume",
    pod({}, [agent, { name: "spy", image: "x", volumeMounts: [{ name: "agent-result", mountPath: "/r" }] }]),
    `${T}.containers[1].volumeMounts: container spy may not mount the run's own volume agent-result`,
  ],
  [
    "an init container mounting the workspace",
    pod({
      initContainers: [{ name: "seed", image: "x", volumeMounts: [{ name: "workspace", mountPath: "/w" }] }],
    }),
    `${T}.initContainers[0].volumeMounts: container seed may not mount the run's own volume workspace`,
  ],
  [
    "a root sidecar",
    pod({}, [agent, { name: "root", image: "x", securityContext: { runAsUser: 0 } }]),
    `${T}.containers[1].securityContext.runAsUser: container root may not run as root`,
  ],
  [
    "a sidecar that says it may run as root",
    pod({}, [agent, { name: "root", image: "x", securityContext: { runAsNonRoot: false } }]),
    `${T}.containers[1].securityContext.runAsNonRoot: container root may not run as root`,
  ],
  [
    "a privileged init container",
    pod({ initContainers: [{ name: "p", image: "x", securityContext: { privileged: true } }] }),
    "container p is privileged",
  ],
  [
    "a sidecar escalating",
    pod({}, [agent, { name: "e", image: "x", securityContext: { allowPrivilegeEscalation: true } }]),
    `${T}.containers[1].securityContext.allowPrivilegeEscalation: container e may not escalate privileges`,
  ],
  [
    "capabilities added to the agent container",
    pod({}, [{ ...agent, securityContext: { capabilities: { add: ["SYS_PTRACE"] } } }]),
    `${T}.containers[0].securityContext.capabilities.add: container agent may not add capabilities; the controller sets them`,
  ],
  [
    "an unmasked /proc in the agent container",
    pod({}, [{ ...agent, securityContext: { procMount: "Unmasked" } }]),
    `${T}.containers[0].securityContext.procMount: container agent may not unmask /proc`,
  ],
  [
    "a postStart hook in the agent container",
    pod({}, [{ ...agent, lifecycle: { postStart: { exec: { command: ["sh", "-c", "id"] } } } }]),
    `${T}.containers[0].lifecycle.postStart: hooks are not allowed in the agent container (they would run beside the witness, as its user)`,
  ],
  [
    "a preStop hook in the agent container",
    pod({}, [{ ...agent, lifecycle: { preStop: { httpGet: { port: 1 } } } }]),
    `${T}.containers[0].lifecycle.preStop: hooks are not allowed in the agent container (they would run beside the witness, as its user)`,
  ],
  [
    "an exec probe in the agent container",
    pod({}, [{ ...agent, livenessProbe: { exec: { command: ["cat", "/proc/1/environ"] } } }]),
    `${T}.containers[0].livenessProbe.exec: exec probes are not allowed in the agent container`,
  ],
];

const allowed: Row[] = [
  ["a plain template", pod({}), undefined],
  ["the default ServiceAccount", pod({ serviceAccountName: "default" }), undefined],
  [
    "a ServiceAccount the installation lists",
    pod({ serviceAccountName: "runner" }),
    undefined,
    { serviceAccounts: ["runner"], volumeKinds: [] },
  ],
  [
    "emptyDir, configMap, downwardAPI and ephemeral volumes",
    pod({
      volumes: [
        { name: "a", emptyDir: {} },
        { name: "b", configMap: { name: "c" } },
        { name: "c", downwardAPI: { items: [] } },
        { name: "d", ephemeral: { volumeClaimTemplate: { spec: {} } } },
      ],
    }),
    undefined,
  ],
  [
    "a Secret volume when the installation allows secret volumes and lists that Secret",
    pod({ volumes: [{ name: "s", secret: { secretName: "ca" } }] }),
    undefined,
    { serviceAccounts: [], volumeKinds: ["secret"], secrets: ["ca"] },
  ],
  [
    "a template volume named like a run volume (the controller replaces it)",
    pod({ volumes: [{ name: "workspace", secret: { secretName: "x" } }] }),
    undefined,
  ],
  [
    "a sidecar with its own volume, as a non-root user",
    pod({ volumes: [{ name: "cache", emptyDir: {} }] }, [
      agent,
      {
        name: "proxy",
        image: "x",
        volumeMounts: [{ name: "cache", mountPath: "/c" }],
        securityContext: { runAsUser: 1000 },
      },
    ]),
    undefined,
  ],
  [
    "an httpGet readiness probe in the agent container",
    pod({}, [{ ...agent, readinessProbe: { httpGet: { port: 8080 } } }]),
    undefined,
  ],
];

describe("the Station template policy", () => {
  it.each(attacks)("refuses %s", (_, template, want, policy) => {
    expect(stationTemplateProblem(template, policy)).toBe(want);
  });
  it.each(allowed)("allows %s", (_, template, want, policy) => {
    expect(stationTemplateProblem(template, policy)).toBe(want);
  });
  it("knows every volume the Job builder owns", () => {
    for (const name of ["agent", "workspace", RESULT_VOLUME]) expect(RUN_VOLUME_NAMES.has(name)).toBe(true);
  });
});
