/**
 * src/core/readback/: reading a finished run back. Its terminal status from the Job and pod
 * (readback.ts), the capped output, session id and pull request (output.ts), and what its log says
 * it cost (log-meter.ts).
 *
 * Turns an observed Job and pod into the terminal status of a run (Running → Succeeded | Failed,
 * docs/run-pod.md#what-the-controller-reads-back). Read-back is best effort: a missing pod or
 * log never leaves the Agent Running.
 */
import type { V1ContainerStatus } from "@kubernetes/client-node";
import type { FailureKind } from "../actions.js";
import type { Vendor } from "../cli/routing.js";
import type { JobObservation, LogRead, PodObservation } from "../input.js";
import { droppedFieldNote, prUrlProblem, sessionIdProblem } from "./agent-strings.js";
import { type LogFacts, meterText } from "./log-meter.js";
import { capOutput } from "./output.js";

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

/**
 * What a log read said: the facts the controller metered as it streamed the whole log, else the
 * same meter over the text (a log handed in whole).
 */
export function logFacts(read: Extract<LogRead, { available: true }>, vendor: Vendor): LogFacts {
  return read.facts ?? meterText(read.text, { vendor, keepBytes: 0 }).facts;
}

/** The output of a read: the log's tail, capped at MAX_OUTPUT_BYTES, the bytes before it counted. */
const outputOf = (read: Extract<LogRead, { available: true }>, maxOutputBytes: number) =>
  capOutput(read.text, maxOutputBytes, read.droppedBytes ?? 0);

/**
 * The session id and pull request URL a read-back records, each within its bounds
 * (src/core/readback/agent-strings.ts): one outside them is left out and `dropped` says why.
 */
function checkedIds(
  agent: LogFacts | undefined,
  courier: LogFacts | undefined,
): { sessionId?: string; prUrl?: string; dropped: string[] } {
  const out: { sessionId?: string; prUrl?: string; dropped: string[] } = { dropped: [] };
  // Only a found id is written: an id the prompt API recorded is never cleared by an empty one.
  const id = agent?.sessionId ?? "";
  const idProblem = id === "" ? undefined : sessionIdProblem(id);
  if (idProblem !== undefined) out.dropped.push(droppedFieldNote("sessionId", idProblem));
  else if (id !== "") out.sessionId = id;
  if (courier !== undefined) {
    const url = courier.pullRequestUrl;
    const urlProblem = url === "" ? undefined : prUrlProblem(url);
    if (urlProblem !== undefined) out.dropped.push(droppedFieldNote("prUrl", urlProblem));
    else out.prUrl = url;
  }
  return out;
}

/** `reason; note; note`, or the notes alone. */
const withNotes = (reason: string | undefined, notes: string[]) =>
  [reason, ...notes].filter((p): p is string => !!p).join("; ") || undefined;

/**
 * The terminal status for a finished (or vanished) Job. exitCode always agrees with the phase:
 * Succeeded → 0; Failed → the container's code when non-zero, else 1. `facts` are the agent's and
 * the courier's metered logs (running-job.ts); without them the logs' texts are metered here.
 */
export function terminalFromJob(
  state: Exclude<JobState, { state: "running" }>,
  pod: PodObservation | undefined,
  vendor: Vendor,
  maxOutputBytes: number,
  facts?: { agent?: LogFacts; courier?: LogFacts },
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
  const read = pod?.found && pod.agentLog.available ? pod.agentLog : undefined;
  const logError = pod?.found && !pod.agentLog.available ? pod.agentLog.error : undefined;
  const courierRead = pod?.found && pod.courierLog?.available ? pod.courierLog : undefined;
  const agentFacts = facts?.agent ?? (read ? logFacts(read, vendor) : undefined);
  const courierFacts = facts?.courier ?? (courierRead ? logFacts(courierRead, "exec") : undefined);
  const ids = read === undefined ? { dropped: [] } : checkedIds(agentFacts, courierFacts);
  const readBack: Partial<TerminalResult> =
    read === undefined
      ? { output: "" }
      : {
          output: outputOf(read, maxOutputBytes),
          ...(ids.sessionId !== undefined ? { sessionId: ids.sessionId } : {}),
          ...(ids.prUrl !== undefined ? { prUrl: ids.prUrl } : {}),
        };
  const agentEnd = pod?.found ? terminated(pod.containerStatuses, "agent") : undefined;

  if (state.state === "succeeded") {
    const reason =
      read === undefined ? (logError !== undefined ? msgLogUnreadable(logError) : MSG_POD_GC) : undefined;
    const failureReason = withNotes(reason, ids.dropped);
    return {
      phase: "Succeeded",
      exitCode: 0,
      output: readBack.output ?? "",
      ...(failureReason !== undefined ? { failureReason } : {}),
      ...(read === undefined ? { failureKind: "output_unavailable" as const } : {}),
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
    if (pod?.found && pod.initLog?.available) output = outputOf(pod.initLog, maxOutputBytes);
  } else if (generic && agentEnd?.reason === "OOMKilled") {
    reason = msgOomKilled(code);
  } else if (generic && code === 124) {
    // A run that waited for its provider until its deadline names the provider's last answer: from
    // the supervisor's last wait, else (the deadline left no room for a first wait) the CLI's last
    // error line, which carries the provider's words.
    const provider = agentFacts?.providerAnswer ?? (agentFacts?.cliError || undefined);
    reason = provider
      ? `run deadline exceeded; the provider's last answer: ${provider}`
      : "run deadline exceeded";
  } else if (generic && code !== 0) {
    // The CLI's own words (an API error it gave up on) say more than its exit code.
    const cliError = agentFacts?.cliError ?? "";
    reason = cliError ? `${vendor} exited with code ${code}: ${cliError}` : `agent exited with code ${code}`;
  } else if (generic && courierFacts !== undefined) {
    const delivery = courierFacts.deliveryFailure;
    if (delivery) reason = `delivery failed: ${delivery}`;
  }
  return {
    phase: "Failed",
    exitCode: code !== 0 ? code : 1,
    output,
    failureReason: withNotes(reason, ids.dropped) ?? reason,
    failureKind: "job_failed",
    ...withoutUndefined({ sessionId: readBack.sessionId, prUrl: readBack.prUrl }),
  };
}

function withoutUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
