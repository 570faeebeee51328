/**
 * Pods that can never start (docs/decisions.md D-22). A missing agent-secrets key or an unpullable image leaves the
 * run pod waiting until the Job's deadline, which may be hours away; past a bound, the controller
 * ends the run with the kubelet's own reason instead. Unschedulable pods are left to the deadline:
 * capacity may still come.
 *
 * Pure. "Waiting since" is measured from the pod's creationTimestamp, which every replica can
 * read, so a controller restart or a leader change does not reset the clock.
 */
import type { V1ContainerStatus } from "@kubernetes/client-node";

/** The wait after which such a pod is given up on: 5 minutes (STUCK_POD_SECONDS). */
export const DEFAULT_STUCK_POD_SECONDS = 300;

/** Waiting reasons that no amount of waiting fixes without someone changing the cluster. */
export const NEVER_STARTS_REASONS: ReadonlySet<string> = new Set([
  "CreateContainerConfigError",
  "CreateContainerError",
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  // imagePullPolicy: Never and the image is not on the node: the kubelet will never fetch it.
  "ErrImageNeverPull",
]);

/** The containers whose wait decides: the controller's init and the agent (docs/run-pod.md#overview). */
const WATCHED = new Set(["init", "agent"]);

/** A run pod seen while its Job still runs; read only when the pod may be stuck. */
export interface RunningPodObservation {
  /** metadata.creationTimestamp, epoch ms. */
  createdAt: number;
  initContainerStatuses?: V1ContainerStatus[];
  containerStatuses?: V1ContainerStatus[];
}

/**
 * `<reason>: <message>` of the first watched container waiting for one of the never-starts reasons
 * once the pod is older than `stuckSeconds`; undefined while the pod may still start.
 */
export function neverStartsReason(
  pod: RunningPodObservation | undefined,
  now: number,
  stuckSeconds: number,
): string | undefined {
  if (!pod || now - pod.createdAt < stuckSeconds * 1000) return undefined;
  for (const status of [...(pod.initContainerStatuses ?? []), ...(pod.containerStatuses ?? [])]) {
    const waiting = status.state?.waiting;
    if (!WATCHED.has(status.name) || !waiting?.reason || !NEVER_STARTS_REASONS.has(waiting.reason)) continue;
    const message = waiting.message?.trim();
    return message ? `${waiting.reason}: ${message}` : waiting.reason;
  }
  return undefined;
}

/**
 * Whether the gatherer should read the pod of a running Job: only once the run is older than the
 * bound and the Job reports no ready pod, so a healthy run costs no extra API request.
 */
export function mayBeStuck(
  startedAt: number | undefined,
  jobReady: number | undefined,
  now: number,
  stuckSeconds: number,
): boolean {
  return startedAt !== undefined && now - startedAt >= stuckSeconds * 1000 && !(jobReady && jobReady > 0);
}
