/**
 * Turns an observed Job and pod into the terminal status of a run (Running → Succeeded | Failed,
 * docs/run-pod.md#what-the-controller-reads-back). Read-back is best effort: a missing pod or
 * log never leaves the Agent Running.
 */
import type { V1ContainerStatus } from "@kubernetes/client-node";
import type { FailureKind } from "./actions.js";
import type { JobObservation, PodObservation } from "./input.js";
import { capOutput, lastCliError, lastPullRequestUrl, lastSessionId } from "./output.js";
import { lastProviderAnswer } from "./provider-limits/retry-event.js";
import type { Vendor } from "./routing.js";

export const MSG_POD_GC = "run output unavailable: pod garbage-collected";
export const MSG_JOB_GC = "run record unavailable: Job garbage-collected before its result was observed";
/**
 * The kernel's OOM killer ended a process of the agent container at its memory limit (the CRI then
 * reports the container `OOMKilled`); the exit code alone (137) reads like any kill.
 */
export const msgOomKilled = (code: number) =>
  `agent container out of memory (OOMKilled, exit code ${code}): raise the agent container's memory limit in the Station's template`;
/** The pod is there but its log kept failing to read past the retry window (not a GC). */
export const msgLogUnreadable = (error: string) =>
  `run output unavailable: pod log could not be read: ${error}`;

export type JobState =
  | { state: "running" }
  | { state: "succeeded" }
  | { state: "failed"; reason: string; conditionReason?: string }
  | { state: "gone" };

type JobCondition = NonNullable<
  NonNullable<Extract<JobObservation, { found: true }>["status"]>["conditions"]
>[number];

/**
 * Job conditions first, then the pod counters (docs/run-pod.md#what-the-controller-reads-back). Since Kubernetes 1.31 the Job
 * controller sets the interim `SuccessCriteriaMet` / `FailureTarget` as soon as the outcome is
 * decided and the final `Complete` / `Failed` only once the pods are gone; the interim ones carry
 * the same reason (e.g. `DeadlineExceeded`), so they are read before the counters, which move in
 * between and know no reason.
 */
export function jobState(job: JobObservation): JobState {
  if (!job.found) return { state: "gone" };
  const conditions = job.status?.conditions ?? [];
  const holds = (type: string) => conditions.find((c) => c.type === type && c.status === "True");
  if (holds("Complete")) return { state: "succeeded" };
  const failed = holds("Failed") ?? holds("FailureTarget");
  if (failed) return failedBy(failed);
  if (holds("SuccessCriteriaMet")) return { state: "succeeded" };
  if ((job.status?.succeeded ?? 0) > 0) return { state: "succeeded" };
  if ((job.status?.failed ?? 0) > 0) return { state: "failed", reason: "Job failed" };
  return { state: "running" };
}

function failedBy(c: JobCondition): JobState {
  const reason = [c.reason, c.message].filter((p) => p).join(": ") || "Job failed";
  return { state: "failed", reason, ...(c.reason ? { conditionReason: c.reason } : {}) };
}

export interface TerminalResult {
  phase: "Succeeded" | "Failed";
  exitCode: number;
  output: string;
  failureReason?: string;
  sessionId?: string;
  prUrl?: string;
  /** controller_run_failures_total kind, when the run ended with a reason. */
  failureKind?: FailureKind;
}

const terminated = (statuses: V1ContainerStatus[] | undefined, name: string) =>
  statuses?.find((s) => s.name === name)?.state?.terminated;

/**
 * True when the `init` container failed and the `agent` container never ran (docs/decisions.md D-23): the
 * failure and its output are the init's, so the I/O layer reads the init log too.
 */
export function initFailedBeforeAgent(
  containerStatuses: V1ContainerStatus[] | undefined,
  initContainerStatuses: V1ContainerStatus[] | undefined,
): boolean {
  const init = terminated(initContainerStatuses, "init");
  return terminated(containerStatuses, "agent") === undefined && init !== undefined && init.exitCode !== 0;
}

/**
 * The line of the init's termination message that says why it failed (docs/decisions.md D-23): the last line that
 * is not one of its events. The init writes its `init/failed` event on stdout and then the cause
 * on stderr, but the kubelet reads the two streams through separate pipes, so the event can land
 * after the cause in the log; only when there is no other line does an event stand in.
 */
export function initFailureLine(message: string): string {
  const lines = message
    .trim()
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const isEvent = (line: string): boolean => {
    if (!line.startsWith("{")) return false;
    try {
      const v: unknown = JSON.parse(line);
      return typeof v === "object" && v !== null && typeof (v as { kind?: unknown }).kind === "string";
    } catch {
      return false;
    }
  };
  return lines.findLast((l) => !isEvent(l)) ?? lines.at(-1) ?? "";
}

function lastDeliveryFailure(courierLog: string): string | undefined {
  let reason: string | undefined;
  for (const line of courierLog.split("\n")) {
    try {
      const e = JSON.parse(line) as Record<string, unknown>;
      if (e?.kind === "delivery") reason = e.status === "failed" ? String(e.reason ?? "unknown") : undefined;
    } catch {
      // not an event line
    }
  }
  return reason;
}

/**
 * The terminal status for a finished (or vanished) Job. exitCode always agrees with the phase:
 * Succeeded → 0; Failed → the container's code when non-zero, else 1.
 */
export function terminalFromJob(
  state: Exclude<JobState, { state: "running" }>,
  pod: PodObservation | undefined,
  vendor: Vendor,
  maxOutputBytes: number,
): TerminalResult {
  if (state.state === "gone") {
    return {
      phase: "Failed",
      exitCode: 1,
      output: "",
      failureReason: MSG_JOB_GC,
      failureKind: "output_unavailable",
    };
  }
  const log = pod?.found && pod.agentLog.available ? pod.agentLog.text : undefined;
  const logError = pod?.found && !pod.agentLog.available ? pod.agentLog.error : undefined;
  const courier = pod?.found && pod.courierLog?.available ? pod.courierLog.text : undefined;
  const readBack: Partial<TerminalResult> =
    log === undefined
      ? { output: "" }
      : {
          output: capOutput(log, maxOutputBytes),
          // Only a found id is written: an id the prompt API recorded is never cleared by an empty one.
          sessionId: lastSessionId(vendor, log) || undefined,
          ...(courier !== undefined ? { prUrl: lastPullRequestUrl(courier) } : {}),
        };
  const agentEnd = pod?.found ? terminated(pod.containerStatuses, "agent") : undefined;

  if (state.state === "succeeded") {
    return {
      phase: "Succeeded",
      exitCode: 0,
      output: readBack.output ?? "",
      ...(log === undefined
        ? {
            failureReason: logError !== undefined ? msgLogUnreadable(logError) : MSG_POD_GC,
            failureKind: "output_unavailable" as const,
          }
        : {}),
      ...withoutUndefined({ sessionId: readBack.sessionId, prUrl: readBack.prUrl }),
    };
  }

  // Failed: prefer a clearer reason than the Job's generic one when the pod tells more (docs/decisions.md D-23, D-24, D-49).
  let reason = state.reason;
  let code = agentEnd?.exitCode ?? 0;
  let output = readBack.output ?? "";
  const generic = state.conditionReason === undefined || state.conditionReason === "BackoffLimitExceeded";
  const initEnd = pod?.found ? terminated(pod.initContainerStatuses, "init") : undefined;
  if (
    generic &&
    pod?.found &&
    initEnd &&
    initFailedBeforeAgent(pod.containerStatuses, pod.initContainerStatuses)
  ) {
    const lastLine = initFailureLine(initEnd.message ?? "");
    reason = lastLine ? `init failed: ${lastLine}` : `init failed with exit code ${initEnd.exitCode}`;
    code = initEnd.exitCode;
    // docs/decisions.md D-23: the agent never ran, so what there is to show is the init's own log.
    if (pod?.found && pod.initLog?.available) output = capOutput(pod.initLog.text, maxOutputBytes);
  } else if (generic && agentEnd?.reason === "OOMKilled") {
    reason = msgOomKilled(code);
  } else if (generic && code === 124) {
    // A run that waited for its provider until its deadline names the provider's last answer: from
    // the supervisor's last wait, else (the deadline left no room for a first wait) the CLI's last
    // error line, which carries the provider's words.
    const provider =
      log === undefined ? undefined : (lastProviderAnswer(log) ?? (lastCliError(vendor, log) || undefined));
    reason = provider
      ? `run deadline exceeded; the provider's last answer: ${provider}`
      : "run deadline exceeded";
  } else if (generic && code !== 0) {
    // The CLI's own words (an API error it gave up on) say more than its exit code.
    const cliError = log === undefined ? "" : lastCliError(vendor, log);
    reason = cliError ? `${vendor} exited with code ${code}: ${cliError}` : `agent exited with code ${code}`;
  } else if (generic && courier !== undefined) {
    const delivery = lastDeliveryFailure(courier);
    if (delivery) reason = `delivery failed: ${delivery}`;
  }
  return {
    phase: "Failed",
    exitCode: code !== 0 ? code : 1,
    output,
    failureReason: reason,
    failureKind: "job_failed",
    ...withoutUndefined({ sessionId: readBack.sessionId, prUrl: readBack.prUrl }),
  };
}

function withoutUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
