/**
 * Checks a replica runs on its own installation, now and then, for mistakes that would otherwise
 * fail silently (the admission webhook's NetworkPolicy letting every pod in, docs/security.md#admission-webhook).
 * A finding is said where a platform team looks: an error-level log line and a Warning Event on
 * the controller's own Pod (`kubectl describe pod`, `kubectl get events`). A check that cannot be
 * run (a refused read) is a finding too, never a silent pass.
 */
import type { EventRegarding } from "../kube/event-writer.js";
import type { KubeEventRecorder } from "./kube-events/recorder.js";

export interface SelfCheckFinding {
  /** The Event's reason, e.g. AdmissionNetworkOpen. */
  reason: string;
  message: string;
}

export interface SelfCheck {
  name: string;
  run(): Promise<SelfCheckFinding | undefined>;
}

/** A finding already said is said again only after this long while it lasts. */
export const REPEAT_FINDING_MS = 60 * 60_000;

export interface SelfCheckOptions {
  checks: readonly SelfCheck[];
  events: Pick<KubeEventRecorder, "record">;
  /** The controller's own Pod (POD_NAME, POD_UID). */
  pod: { namespace: string; name: string; uid: string };
  log: (line: Record<string, unknown>) => void;
  /** Between two rounds. */
  intervalMs: number;
  now?: () => number;
}

/**
 * Which findings to say: a check's finding when it is new (another message than the last one
 * said for that check) or was said REPEAT_FINDING_MS ago. A fixed problem is forgotten, so a
 * recurrence is said at once.
 */
export function findingFilter(
  now: () => number,
): (check: string, finding: SelfCheckFinding | undefined) => boolean {
  const said = new Map<string, { message: string; at: number }>();
  return (check, finding) => {
    if (finding === undefined) {
      said.delete(check);
      return false;
    }
    const last = said.get(check);
    if (last?.message === finding.message && now() - last.at < REPEAT_FINDING_MS) return false;
    said.set(check, { message: finding.message, at: now() });
    return true;
  };
}

/** One round: every check, each finding `say` lets through logged and recorded. Returns those. */
export async function runSelfChecks(
  o: Omit<SelfCheckOptions, "intervalMs" | "now">,
  say: (check: string, finding: SelfCheckFinding | undefined) => boolean = (_, f) => f !== undefined,
): Promise<SelfCheckFinding[]> {
  const findings: SelfCheckFinding[] = [];
  for (const check of o.checks) {
    let finding: SelfCheckFinding | undefined;
    try {
      finding = await check.run();
    } catch (err) {
      finding = {
        reason: "SelfCheckFailed",
        message: `could not check ${check.name}: ${(err as Error).message}`,
      };
    }
    if (!say(check.name, finding) || finding === undefined) continue;
    findings.push(finding);
    o.log({ level: "error", msg: finding.message, reason: finding.reason, check: check.name });
    const pod: EventRegarding = { apiVersion: "v1", kind: "Pod", ...o.pod };
    o.events.record(pod, {
      type: "Warning",
      reason: finding.reason,
      action: "SelfCheck",
      note: finding.message,
    });
  }
  return findings;
}

/** Runs a round now and every `intervalMs` (nothing when there is nothing to check); returns the stop function. */
export function startSelfChecks(o: SelfCheckOptions): () => void {
  if (o.checks.length === 0) return () => {};
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const say = findingFilter(o.now ?? Date.now);
  const round = async () => {
    await runSelfChecks(o, say);
    if (!stopped) timer = setTimeout(round, o.intervalMs).unref();
  };
  void round();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
