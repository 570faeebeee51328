/**
 * Turns an observed Job and pod into the terminal status of a run (controller-lifecycle.txt
 * "Running → Succeeded | Failed", runtime.md §12). Read-back is best effort: a missing pod or
 * log never leaves the Agent Running.
 */
import type { V1ContainerStatus } from "@kubernetes/client-node";
import type { FailureKind } from "./actions.js";
import type { JobObservation, PodObservation } from "./input.js";
import { capOutput, lastPullRequestUrl, lastSessionId } from "./output.js";
import type { Vendor } from "./routing.js";

export const MSG_POD_GC = "run output unavailable: pod garbage-collected";
export const MSG_JOB_GC = "run record unavailable: Job garbage-collected before its result was observed";

export type JobState =
  | { state: "running" }
  | { state: "succeeded" }
  | { state: "failed"; reason: string; conditionReason?: string }
  | { state: "gone" };

/** Job conditions first, then the pod counters (runtime.md §12). */
export function jobState(job: JobObservation): JobState {
  if (!job.found) return { state: "gone" };
  const conditions = job.status?.conditions ?? [];
  if (conditions.some((c) => c.type === "Complete" && c.status === "True")) return { state: "succeeded" };
  const failed = conditions.find((c) => c.type === "Failed" && c.status === "True");
  if (failed) {
    const reason = [failed.reason, failed.message].filter((p) => p).join(": ") || "Job failed";
    return { state: "failed", reason, ...(failed.reason ? { conditionReason: failed.reason } : {}) };
  }
  if ((job.status?.succeeded ?? 0) > 0) return { state: "succeeded" };
  if ((job.status?.failed ?? 0) > 0) return { state: "failed", reason: "Job failed" };
  return { state: "running" };
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
      ...(log === undefined ? { failureReason: MSG_POD_GC, failureKind: "output_unavailable" as const } : {}),
      ...withoutUndefined({ sessionId: readBack.sessionId, prUrl: readBack.prUrl }),
    };
  }

  // Failed: prefer a clearer reason than the Job's generic one when the pod tells more (OQ-23/24/49).
  let reason = state.reason;
  let code = agentEnd?.exitCode ?? 0;
  const generic = state.conditionReason === undefined || state.conditionReason === "BackoffLimitExceeded";
  const initEnd = pod?.found ? terminated(pod.initContainerStatuses, "init") : undefined;
  if (generic && agentEnd === undefined && initEnd && initEnd.exitCode !== 0) {
    const lastLine = (initEnd.message ?? "").trim().split("\n").pop() ?? "";
    reason = lastLine ? `init failed: ${lastLine}` : `init failed with exit code ${initEnd.exitCode}`;
    code = initEnd.exitCode;
  } else if (generic && code === 124) {
    reason = "run deadline exceeded";
  } else if (generic && code !== 0) {
    reason = `agent exited with code ${code}`;
  } else if (generic && courier !== undefined) {
    const delivery = lastDeliveryFailure(courier);
    if (delivery) reason = `delivery failed: ${delivery}`;
  }
  return {
    phase: "Failed",
    exitCode: code !== 0 ? code : 1,
    output: readBack.output ?? "",
    failureReason: reason,
    failureKind: "job_failed",
    ...withoutUndefined({ sessionId: readBack.sessionId, prUrl: readBack.prUrl }),
  };
}

function withoutUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
