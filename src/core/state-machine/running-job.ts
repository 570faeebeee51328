/**
 * Phase rules for a Running Job run (ordinary, realtime, or a started batch fallback): wait until
 * the Job and its pod are read, give up on a pod that can never start, and turn a finished or
 * vanished Job into the terminal transition.
 */
import type { Action } from "../actions.js";
import { jobNameFor } from "../names.js";
import { providerRetriesOf } from "../provider-limits/retry-event.js";
import { jobState, MSG_JOB_GC, type TerminalResult, terminalFromJob } from "../readback.js";
import { DEFAULT_STUCK_POD_SECONDS, neverStartsReason } from "../stuck-pod.js";
import { finish, usageOf } from "./builders.js";
import type { Ctx, Rule } from "./context.js";
import { jobRun } from "./facts.js";

export const MSG_USAGE_UNREAD =
  "the run succeeded but its log carries no usage the controller could read: its cost is unknown";

/** Job-run read-back into a terminal transition. */
function finishJob(c: Ctx): Action[] {
  const state = jobState(c.input.job ?? { found: false });
  if (state.state === "running") return [];
  const result: TerminalResult = terminalFromJob(
    state,
    c.input.pod,
    c.vendor,
    c.input.settings.maxOutputBytes,
  );
  const pod = c.input.pod;
  const read = pod?.found && pod.agentLog.available ? pod.agentLog : undefined;
  // The whole log's usage lines when the controller streamed it; else the text it read.
  const usage = usageOf(c, read ? (read.usageLines ?? read.text) : undefined);
  // The supervisor's provider-limit events: how often and how long the run waited for its provider.
  const lifetime = c.startedAt !== undefined ? { from: c.startedAt, to: c.now } : undefined;
  const retries = read ? providerRetriesOf(read.usageLines ?? read.text, runSeconds(c), lifetime) : undefined;
  // A CLI run that succeeded called its model: no usage at all is flagged, never a silent $0.
  const unread =
    read !== undefined && usage === undefined && c.vendor !== "exec" && result.phase === "Succeeded";
  return finish(c, {
    ...result,
    ...(c.agent.status?.jobName ? {} : { jobName: jobNameFor(c.ref.name) }),
    ...(usage !== undefined ? { usage } : {}),
    ...(unread ? { costNote: MSG_USAGE_UNREAD } : {}),
    ...(retries !== undefined ? { providerRetries: retries } : {}),
  });
}

/** How long the run has lasted (bounds what a forged provider-limit line can claim). */
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
