/**
 * What a Station's pod template may put in a run pod (docs/security.md#the-station-template-policy).
 * Whoever may edit a Station must not gain the controller's powers or another run's secrets
 * through it, so the template is checked as one gathered input against a chain of small named
 * checks, each naming the field it refuses; the first failing check wins. The installation widens
 * the policy deliberately (RUN_POD_SERVICE_ACCOUNTS, RUN_POD_VOLUME_KINDS). Pure.
 *
 * The Job builder fails the Agent at Pending with `invalid Station template: <problem>`, the
 * admission webhook warns with the same words, `kubectl agent validate` reports them.
 */
import type { V1Container, V1PodSpec, V1PodTemplateSpec, V1Volume } from "@kubernetes/client-node";

/** The volumes the controller owns (the agent's home, the workspace, the witness's result). */
export const RUN_VOLUME_NAMES: ReadonlySet<string> = new Set(["agent", "workspace", "agent-result"]);

/** Volume kinds that carry no credential and reach nothing outside the pod: allowed by default. */
export const DEFAULT_VOLUME_KINDS: readonly string[] = ["emptyDir", "configMap", "downwardAPI", "ephemeral"];

/** Volume kinds no installation setting allows: they reach the node itself. */
const NEVER_VOLUME_KINDS = new Set(["hostPath"]);

export interface StationPolicy {
  /** ServiceAccounts a Station may name beside the namespace's `default` (RUN_POD_SERVICE_ACCOUNTS). */
  serviceAccounts: readonly string[];
  /** Volume kinds a Station may add beside DEFAULT_VOLUME_KINDS (RUN_POD_VOLUME_KINDS). */
  volumeKinds: readonly string[];
}

export const DEFAULT_STATION_POLICY: StationPolicy = { serviceAccounts: [], volumeKinds: [] };

interface Gathered {
  spec: V1PodSpec;
  /** Every container the Station adds beside `agent`, init containers included, with its field path. */
  added: { c: V1Container; path: string }[];
  agent: { c: V1Container; path: string } | undefined;
  policy: StationPolicy;
}

type Check = (g: Gathered) => string | undefined;

const T = "spec.template.spec";

const hostNamespaces: Check = ({ spec }) => {
  if (spec.hostNetwork) return "hostNetwork is not allowed";
  if (spec.hostPID) return "hostPID is not allowed";
  if (spec.hostIPC) return "hostIPC is not allowed";
  return undefined;
};

const sharedProcessNamespace: Check = ({ spec }) =>
  spec.shareProcessNamespace
    ? `${T}.shareProcessNamespace is not allowed: the agent could read the other containers' environment (the courier's token)`
    : undefined;

const serviceAccount: Check = ({ spec, policy }) => {
  for (const field of ["serviceAccountName", "serviceAccount"] as const) {
    const sa = spec[field];
    if (sa === undefined || sa === "" || sa === "default" || policy.serviceAccounts.includes(sa)) continue;
    return `${T}.${field} ${JSON.stringify(sa)} is not allowed: the run pod runs as the namespace's default ServiceAccount unless the installation lists another in RUN_POD_SERVICE_ACCOUNTS`;
  }
  return undefined;
};

/** The one key of a volume that says its kind (`secret`, `projected`, `emptyDir`…). */
function volumeKind(v: V1Volume): string {
  return Object.keys(v).find((k) => k !== "name") ?? "emptyDir";
}

const volumes: Check = ({ spec, policy }) => {
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (RUN_VOLUME_NAMES.has(v.name)) continue; // replaced by the controller's own
    const kind = volumeKind(v);
    if (NEVER_VOLUME_KINDS.has(kind)) return `${kind} volume ${v.name} is not allowed`;
    if (DEFAULT_VOLUME_KINDS.includes(kind) || policy.volumeKinds.includes(kind)) continue;
    return `${T}.volumes[${i}] (${v.name}): ${kind} volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`;
  }
  return undefined;
};

const addedContainersMountRunVolumes: Check = ({ added }) => {
  for (const { c, path } of added) {
    const mount = (c.volumeMounts ?? []).find((m) => RUN_VOLUME_NAMES.has(m.name));
    if (mount)
      return `${path}.volumeMounts: container ${c.name} may not mount the run's own volume ${mount.name}`;
    const device = (c.volumeDevices ?? []).find((d) => RUN_VOLUME_NAMES.has(d.name));
    if (device)
      return `${path}.volumeDevices: container ${c.name} may not use the run's own volume ${device.name}`;
  }
  return undefined;
};

const privilegedOrRoot: Check = ({ added, agent }) => {
  for (const { c, path } of [...added, ...(agent ? [agent] : [])]) {
    const sc = c.securityContext;
    if (sc?.privileged) return `container ${c.name} is privileged`;
    if ((sc?.capabilities?.add ?? []).length > 0) {
      return `${path}.securityContext.capabilities.add: container ${c.name} may not add capabilities; the controller sets them`;
    }
    if (sc?.procMount !== undefined && sc.procMount !== "Default") {
      return `${path}.securityContext.procMount: container ${c.name} may not unmask /proc`;
    }
    if (c === agent?.c) continue; // the controller sets the agent container's user and escalation
    if (sc?.runAsUser === 0)
      return `${path}.securityContext.runAsUser: container ${c.name} may not run as root`;
    if (sc?.runAsNonRoot === false)
      return `${path}.securityContext.runAsNonRoot: container ${c.name} may not run as root`;
    if (sc?.allowPrivilegeEscalation === true) {
      return `${path}.securityContext.allowPrivilegeEscalation: container ${c.name} may not escalate privileges`;
    }
  }
  return undefined;
};

const execInAgent: Check = ({ agent }) => {
  if (!agent) return undefined;
  const { c, path } = agent;
  for (const hook of ["postStart", "preStop"] as const) {
    if (c.lifecycle?.[hook]) {
      return `${path}.lifecycle.${hook}: hooks are not allowed in the agent container (they would run beside the witness, as its user)`;
    }
  }
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
    if (c[probe]?.exec) return `${path}.${probe}.exec: exec probes are not allowed in the agent container`;
  }
  return undefined;
};

/** The policy, in order: the first failing check wins. */
const CHECKS: readonly Check[] = [
  hostNamespaces,
  sharedProcessNamespace,
  serviceAccount,
  volumes,
  addedContainersMountRunVolumes,
  privilegedOrRoot,
  execInAgent,
];

/** Why the Station template cannot run, or undefined when it can. */
export function stationTemplateProblem(
  template: unknown,
  policy: StationPolicy = DEFAULT_STATION_POLICY,
): string | undefined {
  const t = (template ?? {}) as V1PodTemplateSpec;
  const spec = t.spec as V1PodSpec | undefined;
  if (!spec || !Array.isArray(spec.containers)) return "spec.containers is missing";
  const agentIndex = spec.containers.findIndex((c) => c?.name === "agent");
  if (agentIndex < 0) return "no container named agent";
  const added = [
    ...(spec.initContainers ?? []).map((c, i) => ({ c, path: `${T}.initContainers[${i}]` })),
    ...spec.containers
      .map((c, i) => ({ c, path: `${T}.containers[${i}]` }))
      .filter((_, i) => i !== agentIndex),
  ];
  const agent = { c: spec.containers[agentIndex] as V1Container, path: `${T}.containers[${agentIndex}]` };
  const gathered: Gathered = { spec, added, agent, policy };
  for (const check of CHECKS) {
    const problem = check(gathered);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * What the webhook says about a template the policy accepts but a kubelet may not start: the
 * controller runs every Station container with runAsNonRoot, so one without a runAsUser starts
 * only if its image's user is a numeric non-root uid.
 */
export function stationTemplateAdvice(template: unknown): string[] {
  const spec = ((template ?? {}) as V1PodTemplateSpec).spec;
  const added = [
    ...(spec?.initContainers ?? []),
    ...(spec?.containers ?? []).filter((c) => c?.name !== "agent"),
  ];
  return added
    .filter((c) => c?.securityContext?.runAsUser === undefined)
    .map(
      (c) =>
        `container ${c.name} sets no securityContext.runAsUser: the controller runs Station containers as non-root, so it starts only if its image's user is a numeric non-root uid (else the pod fails with CreateContainerConfigError)`,
    );
}
