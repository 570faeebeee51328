/**
 * Checks a replica runs on its own installation, now and then, for mistakes that would otherwise
 * fail silently (the admission webhook's NetworkPolicy letting every pod in, docs/security.md#admission-webhook).
 * A finding is said where a platform team looks: an error-level log line and a Warning Event on
 * the controller's own Pod (`kubectl describe pod`, `kubectl get events`). A check that cannot be
 * run (a refused read) is a finding too, never a silent pass.
 */
import type { EventRegarding } from "./kube-events/api-writer.js";
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

export interface SelfCheckOptions {
  checks: readonly SelfCheck[];
  events: Pick<KubeEventRecorder, "record">;
  /** The controller's own Pod (POD_NAME, POD_UID). */
  pod: { namespace: string; name: string; uid: string };
  log: (line: Record<string, unknown>) => void;
  /** Between two rounds; the Event correlator folds repeats into one Event's series. */
  intervalMs: number;
}

/** One round: every check, each finding logged and recorded. Returns the findings. */
export async function runSelfChecks(o: Omit<SelfCheckOptions, "intervalMs">): Promise<SelfCheckFinding[]> {
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
    if (finding === undefined) continue;
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

/** Runs a round now and every `intervalMs`; returns the stop function. */
export function startSelfChecks(o: SelfCheckOptions): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const round = async () => {
    await runSelfChecks(o);
    if (!stopped) timer = setTimeout(round, o.intervalMs).unref();
  };
  void round();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
