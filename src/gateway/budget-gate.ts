/**
 * Budgets in flight (docs/gateway.md#budgets-in-flight): before a metered request of a Station with
 * a budget is forwarded, its worst case is reserved in this process's usage record of the run and
 * written, then every record of the Station is listed from the API server, and the request goes
 * only when everything committed fits. Written before listed, so of two processes admitting at the
 * same time at least one sees the other's reservation: the budget holds across replicas.
 */

import type { RunRef } from "../core/run-job/gateway-credential.js";
import {
  admitRequest,
  inFlightBudget,
  type RecordedRunSpend,
} from "../core/station-limits/budget-in-flight.js";
import type { ModelUsage, Station } from "../core/types.js";
import type { GatewayVendor } from "./vendors.js";

export interface BudgetGateDeps {
  /** The Station as the API server holds it (a short cache is fine: a stale one counts more, not less). */
  station(namespace: string, name: string): Promise<Station | undefined>;
  /** Every usage record of the Station, read fresh (a quorum LIST by its label). */
  records(namespace: string, station: string): Promise<ModelUsage[]>;
  reserve(run: RunRef, vendor: GatewayVendor, station: string, usd: number): Promise<void>;
  release(run: RunRef, vendor: GatewayVendor, usd: number): Promise<void>;
  now?: () => number;
}

export type Admission = { ok: true; reservedUsd: number } | { ok: false; message: string };

export class BudgetGate {
  constructor(private readonly d: BudgetGateDeps) {}

  /** Throws when the Station or its records cannot be read (the request is then refused 503). */
  async admit(
    run: RunRef,
    vendor: GatewayVendor,
    station: string,
    worst: { usd: number; why: string },
  ): Promise<Admission> {
    const st = await this.d.station(run.namespace, station);
    if (!st?.spec.budget) return { ok: true, reservedUsd: 0 };
    await this.d.reserve(run, vendor, station, worst.usd);
    try {
      const records = (await this.d.records(run.namespace, station))
        .filter((r) => r.spec?.station === station)
        .map(spendOf);
      const budget = inFlightBudget(st, records, (this.d.now ?? Date.now)());
      if (!budget) return { ok: true, reservedUsd: worst.usd };
      const verdict = admitRequest(budget, { namespace: run.namespace, station }, worst.usd, worst.why);
      if (verdict.ok) return { ok: true, reservedUsd: worst.usd };
      await this.d.release(run, vendor, worst.usd);
      return verdict;
    } catch (err) {
      await this.d.release(run, vendor, worst.usd).catch(() => {});
      throw err;
    }
  }
}

function spendOf(r: ModelUsage): RecordedRunSpend {
  const usd = (v: string | undefined) => {
    const n = Number(v ?? "0");
    return Number.isFinite(n) ? n : 0;
  };
  return {
    agentUid: r.spec.agent.uid,
    meteredUsd: usd(r.spec.meteredUSD),
    reservedUsd: usd(r.spec.reservedUSD),
    updatedAt: r.spec.updatedAt === undefined ? Number.NaN : Date.parse(r.spec.updatedAt),
  };
}
