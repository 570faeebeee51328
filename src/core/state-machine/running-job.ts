/**
 * Phase rules for a Running Job run (ordinary, realtime, or a started batch fallback): wait until
 * the Job and its pod are read, give up on a pod that can never start, and turn a finished or
 * vanished Job into the terminal transition.
 */
import type { Action } from "../actions.js";
import type { LogRead } from "../input.js";
import { type BoundedUsage, type BoundInput, boundedUsage } from "../pricing/run-bound.js";
import { type LogFacts, type LogMeterPlan, MAX_LINE_BYTES, meterText } from "../readback/log-meter.js";
import { jobState, MSG_JOB_GC, type TerminalResult, terminalFromJob } from "../readback/readback.js";
import { jobNameFor } from "../run-job/names.js";
import { DEFAULT_STUCK_POD_SECONDS, neverStartsReason } from "../run-job/stuck-pod.js";
import { finish, usagePlan } from "./builders.js";
import type { Ctx, Rule } from "./context.js";
import { jobRun } from "./facts.js";

export const MSG_USAGE_UNREAD = "the run succeeded but its log carries no usage the controller could read";

/** How each container's log of this run is metered (src/core/readback/log-meter.ts); gather streams them with it. */
export function readBackPlans(c: Ctx): { agent: LogMeterPlan; other: LogMeterPlan } {
  const keepBytes = c.input.settings.maxOutputBytes;
  const seconds = runSeconds(c);
  return {
    agent: {
      vendor: c.vendor,
      usage: usagePlan(c),
      ...(seconds !== undefined ? { runSeconds: seconds } : {}),
      ...(c.startedAt !== undefined ? { lifetime: { from: c.startedAt, to: c.now } } : {}),
      keepBytes,
    },
    other: { vendor: c.vendor, keepBytes },
  };
}

type Available = Extract<LogRead, { available: true }>;

/** Job-run read-back into a terminal transition. */
function finishJob(c: Ctx): Action[] {
  const state = jobState(c.input.job ?? { found: false });
  if (state.state === "running") return [];
  const plans = readBackPlans(c);
  const pod = c.input.pod;
  const read: Available | undefined = pod?.found && pod.agentLog.available ? pod.agentLog : undefined;
  const courier: Available | undefined = pod?.found && pod.courierLog?.available ? pod.courierLog : undefined;
  // The facts the controller metered while streaming the whole log; else the same meter over the text.
  const agentFacts = read && (read.facts ?? meterText(read.text, plans.agent).facts);
  const courierFacts = courier && (courier.facts ?? meterText(courier.text, plans.other).facts);
  const result: TerminalResult = terminalFromJob(state, pod, c.vendor, c.input.settings.maxOutputBytes, {
    ...(agentFacts ? { agent: agentFacts } : {}),
    ...(courierFacts ? { courier: courierFacts } : {}),
  });
  const bounded = billBound(c, result, read, agentFacts);
  const usage = bounded?.usage ?? agentFacts?.usage;
  // A CLI run that succeeded called its model: no usage at all is flagged, never a silent $0.
  const unread =
    bounded === undefined &&
    read !== undefined &&
    usage === undefined &&
    c.vendor !== "exec" &&
    result.phase === "Succeeded";
  const note = bounded?.note ?? (unread ? MSG_USAGE_UNREAD : undefined);
  return finish(c, {
    ...result,
    ...(c.agent.status?.jobName ? {} : { jobName: jobNameFor(c.ref.name) }),
    ...(usage !== undefined ? { usage } : {}),
    ...(note !== undefined ? { costNote: note } : {}),
    // The supervisor's provider-limit events: how often and how long the run waited for its provider.
    ...(agentFacts?.providerRetries !== undefined ? { providerRetries: agentFacts.providerRetries } : {}),
  });
}

/**
 * The bound on the run's bill (src/core/pricing/run-bound.ts): tokens above what its wall time
 * allows, a log not read whole (its beginning rotated away, lines too long to read, the read
 * failing), or a CLI run that spent time and left no readable usage, is charged the bound.
 */
function billBound(
  c: Ctx,
  result: TerminalResult,
  read: Available | undefined,
  facts: LogFacts | undefined,
): BoundedUsage | undefined {
  const seconds = runSeconds(c);
  if (seconds === undefined || c.input.job?.found !== true) return undefined;
  const pod = c.input.pod;
  const agentRan =
    pod?.found === true &&
    (pod.containerStatuses ?? []).some((s) => s.name === "agent" && s.state?.terminated !== undefined);
  const cli = c.vendor !== "exec";
  let incomplete: BoundInput["incomplete"];
  if (facts !== undefined && read?.facts !== undefined && facts.unreadLines > 0) {
    incomplete = {
      reason: "log-incomplete",
      why: `${facts.unreadLines} line(s) of the run's log were longer than ${MAX_LINE_BYTES} bytes and not read`,
    };
  } else if (facts?.ended && !facts.started) {
    // The supervisor's closing event without its first: the kubelet rotated the log's beginning away.
    incomplete = {
      reason: "log-incomplete",
      why: "the run's log does not hold its beginning (rotated away by the kubelet): its usage cannot be read whole",
    };
  } else if (cli && read === undefined && agentRan) {
    incomplete = {
      reason: "result-unread",
      why: `the run's log could not be read (${result.failureReason ?? "unavailable"})`,
    };
  } else if (cli && read !== undefined && facts?.usage === undefined && result.phase === "Succeeded") {
    incomplete = { reason: "result-unread", why: MSG_USAGE_UNREAD };
  }
  return boundedUsage({
    vendor: c.vendor,
    seconds,
    ...(c.input.prices !== undefined ? { prices: c.input.prices } : {}),
    usage: facts?.usage,
    ...(incomplete !== undefined ? { incomplete } : {}),
  });
}

/** How long the run has lasted (bounds what a forged provider-limit line can claim, and its tokens). */
function runSeconds(c: Ctx): number | undefined {
  return c.startedAt === undefined ? undefined : Math.max(0, (c.now - c.startedAt) / 1000);
}

/** `<reason>: <message>` when the running Job's pod can never start (docs/decisions.md D-22). */
const neverStarts = (c: Ctx) =>
  neverStartsReason(c.input.runningPod, c.now, c.input.settings.stuckPodSeconds ?? DEFAULT_STUCK_POD_SECONDS);

/** Fail the run with the kubelet's reason, then delete its Job so the pod stops waiting. */
function giveUpOnPod(c: Ctx, reason: string): Action[] {
  const jobName = c.agent.status?.jobName || jobNameFor(c.ref.name);
  return finish(
    c,
    { phase: "Failed", exitCode: 1, output: "", failureReason: reason, failureKind: "job_failed" },
    (dep) => [{ type: "deleteJob", id: "delete-job", agent: c.ref, job: jobName, dependsOn: dep }],
  );
}

function jobObserved(c: Ctx): "unread" | "running" | "finished-unread-pod" | "finished" | "gone" {
  const job = c.input.job;
  if (!job) return "unread";
  const state = jobState(job);
  if (state.state === "gone") return "gone";
  if (state.state === "running") return "running";
  return c.input.pod === undefined ? "finished-unread-pod" : "finished";
}

export const jobUnobserved: Rule = {
  id: "job-unobserved",
  from: "Running",
  to: "Running",
  when: "Job run; the Job was not read, or it finished and its pod was not read yet",
  does: "nothing (the executor supplies job and pod)",
  guard: (c) => jobRun(c) && ["unread", "finished-unread-pod"].includes(jobObserved(c)),
  act: () => [],
};

export const podNeverStarts: Rule = {
  id: "pod-never-starts",
  from: "Running",
  to: "Failed",
  when: "Job running; its pod's init or agent container has waited longer than STUCK_POD_SECONDS (5 min) with CreateContainerConfigError, CreateContainerError, ErrImagePull, ImagePullBackOff, InvalidImageName or ErrImageNeverPull",
  does: "patch Failed, exitCode 1, failureReason `<reason>: <message>`; then delete the Job; prune (docs/decisions.md D-22)",
  guard: (c) => jobRun(c) && jobObserved(c) === "running" && neverStarts(c) !== undefined,
  act: (c) => giveUpOnPod(c, neverStarts(c) as string),
};

export const jobRunning: Rule = {
  id: "job-running",
  from: "Running",
  to: "Running",
  when: "Job still running",
  does: "nothing",
  guard: (c) => jobRun(c) && jobObserved(c) === "running",
  act: () => [],
};

export const jobGc: Rule = {
  id: "job-gc",
  from: "Running",
  to: "Failed",
  when: "the Job is gone (404) before its result was observed",
  does: `patch Failed, exitCode 1, failureReason \`${MSG_JOB_GC}\`, output empty; prune`,
  guard: (c) => jobRun(c) && jobObserved(c) === "gone",
  act: (c) => finishJob(c),
};

export const jobFinished: Rule = {
  id: "job-finished",
  from: "Running",
  to: "Succeeded|Failed",
  when: "Job Complete (→ Succeeded) or Failed (→ Failed)",
  does: "patch phase, exitCode (Succeeded 0; Failed non-zero), output (capped tail), failureReason (Job reason, or `run output unavailable: pod garbage-collected`), sessionId, prUrl, completedAt; prune",
  guard: (c) => jobRun(c) && jobObserved(c) === "finished",
  act: (c) => finishJob(c),
};
