/**
 * What a Station's pod template may put in a run pod (docs/security.md#the-station-template-policy).
 * Whoever may edit a Station must not gain the controller's powers or another run's secrets
 * through it, so the template is checked as one gathered input against a chain of small named
 * checks, each naming the field it refuses; the first failing check wins. It is an allowlist
 * (station-template/fields.ts): a pod-spec, container or securityContext field on no list is
 * refused by name. The installation widens the policy deliberately (RUN_POD_SERVICE_ACCOUNTS,
 * RUN_POD_VOLUME_KINDS, RUN_POD_SECRETS, RUN_POD_FIELDS). Pure.
 *
 * The Job builder fails the Agent at Pending with `invalid Station template: <problem>`, the
 * admission webhook warns with the same words, `kubectl agent validate` reports them.
 */
import type { V1Container, V1PodSpec, V1PodTemplateSpec } from "@kubernetes/client-node";
import {
  agentMountPaths,
  containerFields,
  envSecrets,
  hostPorts,
  securityContextFields,
} from "./station-template/containers.js";
import { isObject, withoutNulls } from "./station-template/normalize.js";
import { confinementAnnotations, dnsPolicy, podFields, tolerations } from "./station-template/pod.js";
import {
  type Check,
  type Gathered,
  objectList,
  type PlacedContainer,
  RUN_VOLUME_NAMES,
  type StationPolicy,
  T,
} from "./station-template/types.js";
import { volumes } from "./station-template/volumes.js";

export { RUN_DIRS, RUN_SECRET } from "./station-template/containers.js";
export { withoutNulls } from "./station-template/normalize.js";
export { RUN_VOLUME_NAMES, type StationPolicy } from "./station-template/types.js";
export { DEFAULT_VOLUME_KINDS, NEVER_VOLUME_KINDS } from "./station-template/volumes.js";

export const DEFAULT_STATION_POLICY: StationPolicy = {
  serviceAccounts: [],
  volumeKinds: [],
  secrets: [],
  fields: [],
};

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

/** Lists and objects where a pod spec has them, so that no check below reads a string as a list. */
const containerShapes: Check = (g) => {
  for (const { c, path } of [...(g.agent ? [g.agent] : []), ...g.added]) {
    for (const field of ["env", "envFrom", "ports", "volumeMounts", "volumeDevices"] as const) {
      const list = objectList(c[field], `${path}.${field}`);
      if ("problem" in list) return list.problem;
    }
    for (const field of [
      "securityContext",
      "lifecycle",
      "livenessProbe",
      "readinessProbe",
      "startupProbe",
    ] as const) {
      if (c[field] !== undefined && !isObject(c[field])) return `${path}.${field} must be an object`;
    }
    const caps: unknown = c.securityContext?.capabilities;
    if (caps !== undefined && !isObject(caps))
      return `${path}.securityContext.capabilities must be an object`;
  }
  return undefined;
};

/** The policy, in order: the first failing check wins. */
const CHECKS: readonly Check[] = [
  hostNamespaces,
  sharedProcessNamespace,
  serviceAccount,
  podFields,
  tolerations,
  dnsPolicy,
  confinementAnnotations,
  volumes,
  containerShapes,
  containerFields,
  securityContextFields,
  hostPorts,
  envSecrets,
  addedContainersMountRunVolumes,
  agentMountPaths,
  privilegedOrRoot,
  execInAgent,
];

/** The template's containers with their field paths, or why they cannot be read. */
function gather(template: unknown, policy: StationPolicy): Gathered | string {
  const t = isObject(template) ? template : {};
  const spec = t.spec;
  if (!isObject(spec) || !Array.isArray(spec.containers)) return "spec.containers is missing";
  const containers = objectList(spec.containers, `${T}.containers`);
  if ("problem" in containers) return containers.problem;
  const inits = objectList(spec.initContainers, `${T}.initContainers`);
  if ("problem" in inits) return inits.problem;
  const agentIndex = containers.items.findIndex((c) => c.name === "agent");
  if (agentIndex < 0) return "no container named agent";
  const placed = (c: Record<string, unknown>, path: string): PlacedContainer => ({
    c: c as unknown as V1Container,
    path,
  });
  const added = [
    ...inits.items.map((c, i) => placed(c, `${T}.initContainers[${i}]`)),
    ...containers.items.map((c, i) => placed(c, `${T}.containers[${i}]`)).filter((_, i) => i !== agentIndex),
  ];
  const agent = placed(
    containers.items[agentIndex] as Record<string, unknown>,
    `${T}.containers[${agentIndex}]`,
  );
  const metadata = isObject(t.metadata) ? t.metadata : {};
  const annotations = isObject(metadata.annotations) ? metadata.annotations : {};
  return { spec: spec as unknown as V1PodSpec, annotations, added, agent, policy };
}

/**
 * Why the Station template cannot run, or undefined when it can. The template is judged as the
 * Job builder uses it: with its nulls dropped (withoutNulls).
 */
export function stationTemplateProblem(
  template: unknown,
  policy: StationPolicy = DEFAULT_STATION_POLICY,
): string | undefined {
  const gathered = gather(withoutNulls(template), policy);
  if (typeof gathered === "string") return gathered;
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
  const spec = (withoutNulls(template ?? {}) as V1PodTemplateSpec).spec;
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
