/**
 * The containers the controller puts into a run's pod (docs/run-pod.md#the-job-and-its-pod-template):
 * the Station's `agent` container rewired to start the witness and the supervisor, the `init`
 * container that prepares the volumes, and the `courier` that delivers when the recipe asks for a
 * pull request. A container the Station adds besides is kept, held to security.ts's limits.
 */
import type { V1Container } from "@kubernetes/client-node";
import { SUPERVISOR_PATH } from "../cli/argv.js";
import { buildEnv, installationCliEnv, type RunContext } from "./env.js";
import {
  AGENT_HOME,
  AGENT_RESULT_DIR,
  COURIER_COMMAND,
  REALTIME_PORT,
  RESERVED_ENV,
  RESULT_VOLUME,
  WITNESS_PATH,
  WORKSPACE_DIR,
} from "./layout.js";
import {
  agentSecurityContext,
  initSecurityContext,
  RUN_MOUNTS,
  RUN_VOLUMES,
  witnessSecurityContext,
} from "./security.js";

/** The Station's `agent` container, rewired: the witness runs the supervisor with `supervisorArgs`. */
export function agentContainer(ctx: RunContext, c: V1Container, supervisorArgs: string[]): V1Container {
  const controllerEnv = buildEnv(ctx, "agent");
  const taken = new Set(controllerEnv.map((e) => e.name));
  // docs/decisions.md D-21: the Station's own env stays, below the controller's and the recipe's.
  const stationEnv = (c.env ?? []).filter((e) => !taken.has(e.name) && !RESERVED_ENV.has(e.name));
  const { args: _dropped, ...rest } = c;
  const container: V1Container = {
    ...rest,
    command: [WITNESS_PATH, "--", SUPERVISOR_PATH, "--", ...supervisorArgs],
    env: [...controllerEnv, ...stationEnv, ...installationCliEnv(ctx, [...controllerEnv, ...stationEnv])],
    volumeMounts: [
      ...(c.volumeMounts ?? []).filter((m) => !RUN_VOLUMES.has(m.name)),
      ...RUN_MOUNTS,
      { name: RESULT_VOLUME, mountPath: AGENT_RESULT_DIR },
    ],
    securityContext: { ...c.securityContext, ...witnessSecurityContext() },
    resources:
      c.resources && Object.keys(c.resources).length > 0
        ? c.resources
        : { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "2Gi" } },
    workingDir: c.workingDir || WORKSPACE_DIR,
  };
  if (ctx.realtime) {
    container.ports = [
      ...(c.ports ?? []).filter((p) => p.containerPort !== REALTIME_PORT),
      { name: "prompt", containerPort: REALTIME_PORT },
    ];
    // The supervisor fails /healthz the moment its session stops taking turns: a short period
    // and one failure take the pod out of the prompt API's forwarding quickly (supervisor.md).
    container.readinessProbe = {
      httpGet: { path: "/healthz", port: REALTIME_PORT },
      periodSeconds: 2,
      failureThreshold: 1,
    };
  }
  return container;
}

/** The courier: delivers the agent's work as a pull request once the agent's result is recorded. */
export function courierContainer(ctx: RunContext): V1Container {
  return {
    name: "courier",
    image: ctx.settings.agentImage,
    command: COURIER_COMMAND,
    env: buildEnv(ctx, "courier"),
    volumeMounts: [
      { name: "agent", mountPath: AGENT_HOME, readOnly: true },
      { name: "workspace", mountPath: WORKSPACE_DIR },
      { name: RESULT_VOLUME, mountPath: AGENT_RESULT_DIR, readOnly: true },
    ],
    securityContext: agentSecurityContext(),
    resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "512Mi" } },
  };
}

/** The controller's init container: clones, files and skills into the volumes before the agent starts. */
export function initContainer(ctx: RunContext): V1Container {
  return {
    name: "init",
    image: ctx.settings.agentImage,
    env: buildEnv(ctx, "init"),
    volumeMounts: RUN_MOUNTS.map((m) => ({ ...m })),
    securityContext: initSecurityContext(),
    resources: { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "2Gi" } },
    terminationMessagePolicy: "FallbackToLogsOnError",
  };
}
