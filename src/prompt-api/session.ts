/**
 * Pure decisions about an Agent and its run pod: may a prompt or close be forwarded, and where to.
 * Plain data in, plain decisions out; the app does the I/O.
 */
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import { LABEL_EXECUTION } from "../core/run-job/job.js";
import { msg } from "./messages.js";

/** Where the run pod's supervisor listens (seed). */
export const SUPERVISOR_PORT = 8090;

/** The part of an Agent the prompt API reads; the controller's cached Agent is assignable. */
export interface PromptApiAgent {
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  status?: {
    phase?: string;
    jobName?: string;
    sessionId?: string;
    batchId?: string;
  };
}

/** Where a Running Agent's session can be reached, as far as the controller can tell. */
export type RunPodState =
  | { kind: "not-realtime" }
  | { kind: "not-serving" }
  | { kind: "serving"; baseUrl: string };

export type Refusal = { status: 409; message: string };

/**
 * 409 unless the Agent is Running with a Job (seed). An Agent without a phase has not been
 * reconciled yet, which the state machine calls Pending. A batch run waiting in Running without a
 * Job is refused as "not a realtime run", since that is what it is and will stay.
 */
export function refuseUnlessRunning(name: string, agent: PromptApiAgent): Refusal | undefined {
  const phase = agent.status?.phase || "Pending";
  const hasJob = Boolean(agent.status?.jobName);
  if (phase === "Running" && hasJob) return undefined;
  if (phase === "Running" && agent.status?.batchId) return { status: 409, message: msg.notRealtime(name) };
  return { status: 409, message: msg.notRunning(name, phase) };
}

/** `http://<podIP>:8090`, with IPv6 addresses bracketed. */
export function supervisorBaseUrl(podIP: string): string {
  const host = podIP.includes(":") ? `[${podIP}]` : podIP;
  return `http://${host}:${SUPERVISOR_PORT}`;
}

function podReady(pod: V1Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** The labels the job controller writes on its pods: the Job's uid (legacy and current spelling). */
const CONTROLLER_UID_LABELS = ["batch.kubernetes.io/controller-uid", "controller-uid"] as const;

/**
 * Whether the job controller made `pod` for `job`: every controller-uid label it carries names
 * the Job's uid, and it carries one. `job-name` alone is any pod's to claim: whoever may create
 * pods could otherwise answer the session's prompts and receive the run's token.
 */
export function podOfJob(pod: V1Pod, job: V1Job): boolean {
  const uid = job.metadata?.uid ?? "";
  const labels = pod.metadata?.labels ?? {};
  const uids = CONTROLLER_UID_LABELS.map((l) => labels[l]).filter((v) => v !== undefined);
  return uid !== "" && uids.length > 0 && uids.every((v) => v === uid);
}

/**
 * The run pod's state from the run's Job and its pods (label `job-name=<job>`), per docs/decisions.md D-45:
 * realtime is decided by the execution label on the Job object itself, which the controller
 * writes from the run's own labels and never from the Station's template (a template label could
 * otherwise make an interactive run look realtime; docs/decisions.md D-107). Only when the Job is gone do
 * the pods' labels decide, and `definitionExecution` only when no pod is left either. "serving"
 * means a pod of the Job (its controller-uid label is the Job's uid) that is Ready, has an IP and
 * is not being deleted; with the Job gone no pod can be told to be the run's, so none serves.
 */
export function runPodStateFrom(input: {
  job?: V1Job | undefined;
  pods: V1Pod[];
  definitionExecution?: string | undefined;
}): RunPodState {
  const podLabels = input.pods
    .map((p) => p.metadata?.labels)
    .filter((l): l is Record<string, string> => l !== undefined);
  const realtime = input.job
    ? input.job.metadata?.labels?.[LABEL_EXECUTION] === "realtime"
    : podLabels.length > 0
      ? podLabels.some((l) => l[LABEL_EXECUTION] === "realtime")
      : input.definitionExecution === "realtime";
  if (!realtime) return { kind: "not-realtime" };
  const job = input.job;
  const pod = job
    ? input.pods.find(
        (p) => podOfJob(p, job) && !p.metadata?.deletionTimestamp && p.status?.podIP && podReady(p),
      )
    : undefined;
  if (!pod?.status?.podIP) return { kind: "not-serving" };
  return { kind: "serving", baseUrl: supervisorBaseUrl(pod.status.podIP) };
}
