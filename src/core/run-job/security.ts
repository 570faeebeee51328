/**
 * The run pod's volumes and security contexts (docs/security.md#the-station-template-policy,
 * docs/run-pod.md#the-job-and-its-pod-template): which volumes and mounts the controller owns, and
 * what each container may do, whatever the Station's template says.
 */
import type { V1Container, V1PodSecurityContext, V1SecurityContext, V1Volume } from "@kubernetes/client-node";
import { RUN_VOLUME_NAMES } from "../policy/station-policy.js";
import { AGENT_HOME, RESULT_VOLUME, WORKSPACE_DIR } from "./layout.js";

export const DROP_ALL: V1SecurityContext["capabilities"] = { drop: ["ALL"] };
export const RUNTIME_DEFAULT = { type: "RuntimeDefault" };

/**
 * The agent container starts as root with only what the witness needs: SETUID and SETGID to run
 * the supervisor (and so the CLI) as 1000:1000, KILL to forward signals to it. The supervisor and
 * the CLI get no capabilities (docs/security.md, the agent's result).
 */
export function witnessSecurityContext(): V1SecurityContext {
  return {
    runAsNonRoot: false,
    runAsUser: 0,
    runAsGroup: 0,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], add: ["SETUID", "SETGID", "KILL"] },
    seccompProfile: RUNTIME_DEFAULT,
  };
}

/**
 * A container the Station adds: never root, no escalation, no capability, the runtime's seccomp
 * profile, whatever its securityContext says (docs/security.md#the-station-template-policy; the
 * policy refuses a template that asks for more, this holds for what it leaves unsaid).
 */
export function stationContainer(c: V1Container): V1Container {
  return {
    ...c,
    securityContext: {
      ...c.securityContext,
      privileged: false,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: DROP_ALL,
      seccompProfile: RUNTIME_DEFAULT,
    },
  };
}

export function agentSecurityContext(): V1SecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: 1000,
    runAsGroup: 1000,
    allowPrivilegeEscalation: false,
    capabilities: DROP_ALL,
    seccompProfile: RUNTIME_DEFAULT,
  };
}

/** The volumes the controller owns; a Station volume or mount of the same name is replaced. */
export const RUN_VOLUMES = RUN_VOLUME_NAMES;

export const RUN_MOUNTS = [
  { name: "agent", mountPath: AGENT_HOME },
  { name: "workspace", mountPath: WORKSPACE_DIR },
];

/** The init container runs as root to set up the volumes for uid 1000, with only the capabilities that takes. */
export function initSecurityContext(): V1SecurityContext {
  return {
    runAsUser: 0,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], add: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"] },
    seccompProfile: RUNTIME_DEFAULT,
  };
}

/** The Station's volumes without the ones the controller owns, then the run's own. */
export function runVolumes(stationVolumes: V1Volume[] | undefined): V1Volume[] {
  const volumes: V1Volume[] = (stationVolumes ?? []).filter((v) => !RUN_VOLUMES.has(v.name));
  return [
    ...volumes,
    { name: "agent", emptyDir: {} },
    { name: "workspace", emptyDir: {} },
    { name: RESULT_VOLUME, emptyDir: {} },
  ];
}

/** The pod's own security context: files group-owned by the run's uid, the runtime's seccomp profile. */
export function podSecurityContext(): V1PodSecurityContext {
  return { fsGroup: 1000, seccompProfile: RUNTIME_DEFAULT };
}
