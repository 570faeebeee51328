/**
 * Warning Events the gateway writes on an Agent (docs/gateway.md#what-the-agent-shows): what it
 * refused a run's programs that the run's author must see as it happens, not only in the answer
 * the program got (an egress destination, a provider key it cannot find or read). The gateway
 * writes Events, never the Agent's status (the status is the controller's).
 *
 * A hostile or broken run may be refused thousands of times: each distinct warning of a run is
 * written once, and at most MAX_EVENTS_PER_RUN per run and process.
 */
import type { RunRef } from "../core/run-job/gateway-credential.js";
import { type EventsV1Event, eventObject, REPORTING_GATEWAY } from "../kube/event-writer.js";

/** Distinct warnings per run this process writes as Events. */
export const MAX_EVENTS_PER_RUN = 10;
/** Runs whose written warnings are remembered; the oldest is forgotten past it. */
const MAX_RUNS = 10_000;

export interface RunWarningsOptions {
  /** POSTs one events.k8s.io Event. */
  createEvent(event: EventsV1Event): Promise<void>;
  /** This gateway pod, the Events' reportingInstance. */
  replica: string;
  now?: () => number;
  onError?: (run: RunRef, err: unknown) => void;
}

export class RunWarnings {
  private readonly written = new Map<string, Set<string>>();
  private seq = 0;

  constructor(private readonly o: RunWarningsOptions) {}

  /**
   * A Warning Event `reason` on the run's Agent with `note`, unless this process wrote the same
   * `key` (the reason and note unless given) for the run already or its run's share is spent.
   * Never throws: a failed write is told to onError.
   */
  async warn(
    run: RunRef,
    reason: string,
    action: string,
    note: string,
    key = `${reason} ${note}`,
  ): Promise<void> {
    if (!this.first(run.uid, key)) return;
    await this.o
      .createEvent(this.event(run, reason, action, note))
      .catch((err) => this.o.onError?.(run, err));
  }

  private first(uid: string, key: string): boolean {
    let seen = this.written.get(uid);
    if (!seen) {
      if (this.written.size >= MAX_RUNS) this.written.delete(this.written.keys().next().value as string);
      seen = new Set();
      this.written.set(uid, seen);
    }
    if (seen.has(key) || seen.size >= MAX_EVENTS_PER_RUN) return false;
    seen.add(key);
    return true;
  }

  private event(run: RunRef, reason: string, action: string, note: string): EventsV1Event {
    const at = (this.o.now ?? Date.now)();
    return eventObject({
      name: `${run.name}.gw.${at.toString(36)}${(this.seq++).toString(36)}`.slice(0, 253),
      regarding: { namespace: run.namespace, name: run.name, uid: run.uid },
      event: { type: "Warning", reason, action, note },
      note,
      at,
      reportingInstance: this.o.replica,
      reportingController: REPORTING_GATEWAY,
    });
  }
}
