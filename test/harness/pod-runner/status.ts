/**
 * What the pod runner reports in `pods/status`, computed like the kubelet does for
 * `restartPolicy: Never` pods (phase, container statuses, conditions). Pure: the runner feeds it
 * each container's current state and writes the result.
 */
import type {
  ContainerSpec,
  ContainerState,
  ContainerStatusJson,
  PodConditionJson,
  PodJson,
  PodStatusJson,
} from "./types.js";

/** One container as the runner sees it. */
export type RunState =
  | { kind: "waiting"; reason: string; message?: string }
  | { kind: "running"; startedAt: string; ready: boolean; containerID: string }
  | {
      kind: "terminated";
      exitCode: number;
      reason: string;
      message?: string;
      startedAt: string;
      finishedAt: string;
      containerID: string;
    };

export interface PodView {
  init: RunState[];
  main: RunState[];
  podIP?: string;
  hostIP: string;
  startTime?: string;
  /** Set when the kubelet itself ended the pod (activeDeadlineSeconds). */
  ended?: { reason: string; message: string };
}

/** Exit status of a process as the kubelet reports it: the code, or 128 + signal number. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const numbers: Partial<Record<NodeJS.Signals, number>> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGABRT: 6,
    SIGKILL: 9,
    SIGSEGV: 11,
    SIGPIPE: 13,
    SIGALRM: 14,
    SIGTERM: 15,
  };
  return 128 + (signal ? (numbers[signal] ?? 0) : 0);
}

/** The terminated reason the kubelet (container runtime) reports. */
export function terminatedReason(exitCode: number): string {
  return exitCode === 0 ? "Completed" : "Error";
}

/** Pod phase for restartPolicy Never (kubelet's getPhase). */
export function podPhase(view: PodView): "Pending" | "Running" | "Succeeded" | "Failed" {
  if (view.ended) return "Failed";
  const failed = (s: RunState) => s.kind === "terminated" && s.exitCode !== 0;
  if (view.init.some(failed)) return "Failed";
  if (!view.init.every((s) => s.kind === "terminated")) return "Pending";
  if (view.main.length > 0 && view.main.every((s) => s.kind === "terminated")) {
    return view.main.some(failed) ? "Failed" : "Succeeded";
  }
  return view.main.some((s) => s.kind !== "waiting") ? "Running" : "Pending";
}

function stateJson(state: RunState): ContainerState {
  switch (state.kind) {
    case "waiting":
      return { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } };
    case "running":
      return { running: { startedAt: state.startedAt } };
    case "terminated":
      return {
        terminated: {
          exitCode: state.exitCode,
          reason: state.reason,
          ...(state.message ? { message: state.message } : {}),
          startedAt: state.startedAt,
          finishedAt: state.finishedAt,
          containerID: state.containerID,
        },
      };
  }
}

function containerStatus(spec: ContainerSpec, state: RunState): ContainerStatusJson {
  const image = spec.image ?? "";
  return {
    name: spec.name,
    image,
    imageID: `pod-runner://${image}`,
    ...(state.kind !== "waiting" ? { containerID: state.containerID } : {}),
    ready: state.kind === "running" && state.ready,
    started: state.kind === "running",
    restartCount: 0,
    state: stateJson(state),
  };
}

type Condition = Omit<PodConditionJson, "lastTransitionTime" | "lastProbeTime">;

function conditions(pod: PodJson, view: PodView, phase: string): Condition[] {
  const inits = pod.spec.initContainers ?? [];
  const incomplete = inits
    .filter((_, i) => {
      const s = view.init[i];
      return !(s?.kind === "terminated" && s.exitCode === 0);
    })
    .map((c) => c.name);
  const unready = pod.spec.containers
    .filter((_, i) => {
      const s = view.main[i];
      return !(s?.kind === "running" && s.ready);
    })
    .map((c) => c.name);
  const done = phase === "Succeeded" || phase === "Failed";
  const readiness = (type: string): Condition =>
    unready.length === 0
      ? { type, status: "True" }
      : done
        ? { type, status: "False", reason: "PodCompleted" }
        : {
            type,
            status: "False",
            reason: "ContainersNotReady",
            message: `containers with unready status: [${unready.join(" ")}]`,
          };
  return [
    { type: "PodReadyToStartContainers", status: done ? "False" : "True" },
    incomplete.length === 0
      ? { type: "Initialized", status: "True" }
      : {
          type: "Initialized",
          status: "False",
          reason: "ContainersNotInitialized",
          message: `containers with incomplete status: [${incomplete.join(" ")}]`,
        },
    readiness("Ready"),
    readiness("ContainersReady"),
    { type: "PodScheduled", status: "True" },
  ];
}

/** Keeps lastTransitionTime of conditions whose status did not change. */
export function withTransitionTimes(
  previous: PodConditionJson[] | undefined,
  next: Condition[],
  now: string,
): PodConditionJson[] {
  return next.map((c) => {
    const before = previous?.find((p) => p.type === c.type);
    const since = before && before.status === c.status ? before.lastTransitionTime : now;
    return { ...c, lastProbeTime: null, lastTransitionTime: since };
  });
}

/** The full status the runner writes for `pod` in the state `view`. */
export function podStatus(pod: PodJson, view: PodView, now: string): PodStatusJson {
  const phase = podPhase(view);
  const inits = pod.spec.initContainers ?? [];
  const status: PodStatusJson = {
    phase,
    ...(view.ended ? { reason: view.ended.reason, message: view.ended.message } : {}),
    hostIP: view.hostIP,
    hostIPs: [{ ip: view.hostIP }],
    ...(view.podIP ? { podIP: view.podIP, podIPs: [{ ip: view.podIP }] } : {}),
    ...(view.startTime ? { startTime: view.startTime } : {}),
    conditions: withTransitionTimes(pod.status?.conditions, conditions(pod, view, phase), now),
    containerStatuses: pod.spec.containers.map((c, i) =>
      containerStatus(c, view.main[i] ?? { kind: "waiting", reason: "ContainerCreating" }),
    ),
  };
  if (inits.length > 0) {
    status.initContainerStatuses = inits.map((c, i) =>
      containerStatus(c, view.init[i] ?? { kind: "waiting", reason: "PodInitializing" }),
    );
  }
  return status;
}
