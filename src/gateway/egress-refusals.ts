/**
 * Where a refusal of the egress proxy goes besides the program's 403 (docs/gateway.md#egress): the
 * run's usage record (the controller sums it into status.egress and the sinks' egress event when
 * the run ends) and a Warning Event `EgressRefused` on the Agent as it happens (run-warnings.ts:
 * once per destination and role, for a run's first few). Every refusal is counted.
 */

import { EGRESS_ROLES, type EgressRole } from "../core/egress/destinations.js";
import type { RunRef } from "../core/run-job/gateway-credential.js";
import type { ModelUsageEgressRefusal } from "../core/types.js";
import { type EgressRefusal, refusalText } from "./egress/proxy-server.js";
import type { RunWarnings } from "./run-warnings.js";

export const EGRESS_REFUSED_REASON = "EgressRefused";

export interface EgressRefusalSinks {
  /** The run's usage record (ModelUsageStore.egressRefused). */
  record(run: RunRef, refusal: ModelUsageEgressRefusal): Promise<void>;
  warnings: Pick<RunWarnings, "warn">;
  onError?: (what: string, run: RunRef, err: unknown) => void;
}

export class EgressRefusalReporter {
  constructor(private readonly o: EgressRefusalSinks) {}

  /** Counts the refusal and reports it; never throws (a failed write is told to onError). */
  async refused(run: RunRef, refusal: ModelUsageEgressRefusal): Promise<void> {
    await Promise.all([
      this.o.record(run, refusal).catch((err) => this.o.onError?.("usage record", run, err)),
      this.o.warnings.warn(
        run,
        EGRESS_REFUSED_REASON,
        "RefuseEgress",
        refusal.reason,
        `${refusal.role} ${refusal.destination}`,
      ),
    ]);
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
