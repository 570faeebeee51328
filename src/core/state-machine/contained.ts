/**
 * The net under the rules (docs/controller.md#watch-poll-and-cache): what becomes of an
 * Agent whose reconcile threw the configured number of times in a row (RECONCILE_ERROR_TRIES).
 * The rules are pure over their input, so the same input throws again: retrying for ever would
 * hold the Agent's Station slot and budget and reconcile it every second. The causes are fixed
 * where they are found (a price looked up by an agent-written model id, a time out of range);
 * this only keeps one Agent's bad input from holding it, or its Station, for ever.
 *
 * - Pending, or Running with the Job's outcome not yet known: Failed with MSG_RECONCILE_FAILED
 *   (the running Job deleted, so it stops spending).
 * - Running with the Job's outcome known: the Job decides the phase, read without what threw
 *   (its usage, when pricing it threw: the cost is flagged in costNote).
 * - A provider batch in flight stays Running until batch.timeoutMinutes (the batch seed), then
 *   ends `batch timed out` with the reason.
 * - Terminal: nothing (terminal → terminal is a no-op); being deleted: nothing.
 * Pure; undefined means "no containment: retry with back-off".
 */
import type { Action } from "../actions.js";
import { report } from "../events/report.js";
import type { ReconcileInput } from "../input.js";
import { type LogFacts, meterText } from "../readback/log-meter.js";
import { jobState, terminalFromJob } from "../readback/readback.js";
import { jobNameFor } from "../run-job/names.js";
import { agentRef, isTerminal, phaseOf } from "../types.js";
import { finish, type Terminal } from "./builders.js";
import { type Ctx, context } from "./context.js";
import { batchInFlight, MSG_BATCH_TIMED_OUT, timedOut } from "./facts.js";
import { readBackPlans } from "./running-job.js";
import { rfc3339 } from "./timing.js";

/** RECONCILE_ERROR_TRIES default: reconciles that throw in a row before the Agent is contained. */
export const DEFAULT_RECONCILE_ERROR_TRIES = 5;

/** The start of failureReason of an Agent its failing reconciles ended. */
export const MSG_RECONCILE_FAILED = "the controller could not reconcile this Agent";

/** The error's words in a reason, at most this long. */
const MAX_ERROR_CHARS = 512;

/** failureReason: `the controller could not reconcile this Agent (5 tries in a row): <error>`. */
export function reconcileFailedReason(tries: number, error: string): string {
  const words = error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error;
  return `${MSG_RECONCILE_FAILED} (${tries} tries in a row): ${words}`;
}

/** costNote of a run stopped before its log was read. */
export const MSG_COST_UNREAD_STOPPED =
  "the run was stopped because its reconcile kept failing, before its log was read: its cost is unknown";

/** costNote of a finished run whose usage could not be priced. */
export const MSG_COST_UNREAD_ERROR =
  "the run's usage could not be read (its reconcile failed on it): its cost is unknown";

export interface ReconcileFailure {
  /** Reconciles of this Agent that threw in a row, this one included. */
  tries: number;
  /** The last error, as the controller logged it. */
  error: string;
}

/** The actions that end the failing reconciles (with conditions and Events), or undefined to keep retrying. */
export function containedReconcile(input: ReconcileInput, f: ReconcileFailure): Action[] | undefined {
  const actions = containment(input, f);
  if (actions === undefined) return undefined;
  try {
    return report(input, { rules: ["reconcile-contained"], actions }, rfc3339(input.now));
  } catch {
    return actions;
  }
}

function containment(input: ReconcileInput, f: ReconcileFailure): Action[] | undefined {
  const { agent } = input;
  if (agent.metadata.deletionTimestamp || isTerminal(phaseOf(agent))) return undefined;
  const reason = reconcileFailedReason(f.tries, f.error);
  let c: Ctx;
  try {
    c = context(input);
  } catch {
    return bareFailure(input, reason);
  }
  try {
    if (c.phase === "Pending") return finish(c, failed(reason));
    if (batchInFlight(c)) {
      // The batch seed: a poll or translation error keeps the run Running until its timeout.
      if (!timedOut(c)) return undefined;
      return finish(c, { ...failed(`${MSG_BATCH_TIMED_OUT}; ${reason}`), failureKind: "batch_timeout" });
    }
    return jobOutcome(c, reason);
  } catch {
    return c.phase === "Pending" ? bareFailure(input, reason) : undefined;
  }
}

const failed = (reason: string): Terminal => ({
  phase: "Failed",
  exitCode: 1,
  output: "",
  failureReason: reason,
  failureKind: "reconcile_error",
});

/** A Running Job run: the Job decides once its outcome is known; else Failed and the Job deleted. */
function jobOutcome(c: Ctx, reason: string): Action[] | undefined {
  const job = c.input.job;
  const state = job ? jobState(job) : undefined;
  if (state === undefined || state.state === "running") {
    const jobName = c.agent.status?.jobName || jobNameFor(c.ref.name);
    return finish(c, { ...failed(reason), jobName, costNote: MSG_COST_UNREAD_STOPPED }, (dep) => [
      { type: "deleteJob", id: "delete-job", agent: c.ref, job: jobName, dependsOn: dep },
    ]);
  }
  // The Job's outcome is known: it decides the phase (a pod not read yet is waited for, as the rules do).
  if (state.state !== "gone" && c.input.pod === undefined) return undefined;
  const pod = c.input.pod;
  const read = pod?.found && pod.agentLog.available ? pod.agentLog : undefined;
  // What the log's meter read, when it can still be read: the rules threw, so this may throw too.
  let facts: LogFacts | undefined;
  try {
    facts = read && (read.facts ?? meterText(read.text, readBackPlans(c).agent).facts);
  } catch {
    facts = undefined;
  }
  const result = terminalFromJob(
    state,
    pod,
    c.vendor,
    c.input.settings.maxOutputBytes,
    facts ? { agent: facts } : undefined,
  );
  const usage = facts?.usage;
  const unread = read !== undefined && usage === undefined && c.vendor !== "exec";
  return finish(c, {
    ...result,
    ...(c.agent.status?.jobName ? {} : { jobName: jobNameFor(c.ref.name) }),
    ...(usage !== undefined ? { usage } : {}),
    ...(unread ? { costNote: MSG_COST_UNREAD_ERROR } : {}),
  });
}

/** The terminal patch alone, for an input the rules' context cannot even be built from. */
function bareFailure(input: ReconcileInput, reason: string): Action[] {
  const { agent } = input;
  return [
    {
      id: "patch-status",
      type: "patchStatus",
      agent: agentRef(agent),
      resourceVersion: agent.metadata.resourceVersion ?? "",
      status: {
        phase: "Failed",
        exitCode: 1,
        output: "",
        failureReason: reason,
        completedAt: rfc3339(input.now),
      },
    },
  ];
}
