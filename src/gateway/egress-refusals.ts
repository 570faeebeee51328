/**
 * Where a refusal of the egress proxy goes besides the program's 403 (docs/gateway.md#egress): the
 * run's usage record (the controller sums it into status.egress and the sinks' egress event when
 * the run ends) and a Warning Event `EgressRefused` on the Agent as it happens. The gateway writes
 * Events, never the Agent's status (the status is the controller's).
 *
 * A hostile agent may try thousands of hosts: every refusal is counted, but Events are written
 * for the first distinct destinations of a run only (MAX_EVENTS_PER_RUN per process), once each.
 */

import { EGRESS_ROLES, type EgressRole } from "../core/egress/destinations.js";
import type { RunRef } from "../core/run-job/gateway-credential.js";
import type { ModelUsageEgressRefusal } from "../core/types.js";
import { type EventsV1Event, eventObject, REPORTING_GATEWAY } from "../kube/event-writer.js";
import { type EgressRefusal, refusalText } from "./egress/proxy-server.js";

export const EGRESS_REFUSED_REASON = "EgressRefused";
/** Distinct destinations per run whose refusal this process reports as an Event. */
export const MAX_EVENTS_PER_RUN = 10;
/** Runs whose reported destinations are remembered; the oldest is forgotten past it. */
const MAX_RUNS = 10_000;

export interface EgressRefusalSinks {
  /** The run's usage record (ModelUsageStore.egressRefused). */
  record(run: RunRef, refusal: ModelUsageEgressRefusal): Promise<void>;
  /** POSTs one events.k8s.io Event. */
  createEvent(event: EventsV1Event): Promise<void>;
  /** This gateway pod, the Events' reportingInstance. */
  replica: string;
  now?: () => number;
  onError?: (what: string, run: RunRef, err: unknown) => void;
}

export class EgressRefusalReporter {
  private readonly reported = new Map<string, Set<string>>();
  private seq = 0;

  constructor(private readonly o: EgressRefusalSinks) {}

  /** Counts the refusal and reports it; never throws (a failed write is told to onError). */
  async refused(run: RunRef, refusal: ModelUsageEgressRefusal): Promise<void> {
    const key = `${refusal.role} ${refusal.destination}`;
    const writes: Promise<unknown>[] = [
      this.o.record(run, refusal).catch((err) => this.o.onError?.("usage record", run, err)),
    ];
    if (this.firstReport(run.uid, key)) {
      writes.push(
        this.o.createEvent(this.event(run, refusal)).catch((err) => this.o.onError?.("Event", run, err)),
      );
    }
    await Promise.all(writes);
  }

  private firstReport(uid: string, key: string): boolean {
    let seen = this.reported.get(uid);
    if (!seen) {
      if (this.reported.size >= MAX_RUNS) this.reported.delete(this.reported.keys().next().value as string);
      seen = new Set();
      this.reported.set(uid, seen);
    }
    if (seen.has(key) || seen.size >= MAX_EVENTS_PER_RUN) return false;
    seen.add(key);
    return true;
  }

  private event(run: RunRef, refusal: ModelUsageEgressRefusal): EventsV1Event {
    const at = (this.o.now ?? Date.now)();
    return eventObject({
      name: `${run.name}.egress.${at.toString(36)}${(this.seq++).toString(36)}`.slice(0, 253),
      regarding: { namespace: run.namespace, name: run.name, uid: run.uid },
      event: { type: "Warning", reason: EGRESS_REFUSED_REASON, action: "RefuseEgress", note: refusal.reason },
      note: refusal.reason,
      at,
      reportingInstance: this.o.replica,
      reportingController: REPORTING_GATEWAY,
    });
  }
}

/**
 * A refusal of a run's program (403: not its destination, a private address, an ended run) into
 * the run's record and a Warning Event (docs/gateway.md#egress). Refusals of no run (a forged or
 * missing credential, 407) and failures to connect (502) are the listener's metrics and log only.
 */
export function egressRefusalRecorder(
  reporter: Pick<EgressRefusalReporter, "refused">,
): (refusal: EgressRefusal) => void {
  return (r) => {
    if (r.who === undefined || r.status !== 403 || !(EGRESS_ROLES as readonly string[]).includes(r.who.role))
      return;
    const { role, ...run } = r.who;
    const egressRole = role as EgressRole;
    void reporter.refused(run, {
      destination: `${r.host}:${r.port}`,
      role: egressRole,
      reason: refusalText(r.host, r.port, r.reason, r.who),
    });
  };
}
