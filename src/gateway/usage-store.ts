/**
 * The durable record of what the gateway metered (docs/gateway.md#metering): per run, this
 * process's running totals in one ModelUsage object of its own (`<agent uid>-<process id>`), so no
 * two processes write one object and a replica that restarts loses at most what it had not yet
 * written. The controller sums a run's objects and writes the run's status from them; the gateway
 * never writes an Agent.
 *
 * A call's record is written before its answer ends for the client (the proxy waits for it, a
 * bounded time), so a CLI that has read an answer to its end and exits cannot be priced before its
 * call is recorded. Calls in flight are counted in the object and rewritten every minute, so the
 * controller waits for a call a live process is still reading (the client went away mid-answer)
 * and not for one of a process that is gone.
 */
import { randomBytes } from "node:crypto";
import { formatUsd } from "../core/pricing/estimate.js";
import { addModelTokens } from "../core/pricing/metered.js";
import type { RunRef } from "../core/run-job/gateway-credential.js";
import { LABEL_AGENT_UID, LABEL_COMPONENT, LABEL_STATION } from "../core/run-job/layout.js";
import { shortenName } from "../core/run-job/names.js";
import type { ModelUsage, ModelUsageEgressRefusal, ModelUsageTokens } from "../core/types.js";
import type { UsageRecord, UsageStore } from "./ports.js";
import type { GatewayVendor } from "./vendors.js";

/** What the store needs of the API server: its own objects, created and replaced. */
export interface UsageObjects {
  /** POST; throws a `{ status: 409 }` error when the name exists. */
  create(namespace: string, object: ModelUsage): Promise<ModelUsage>;
  get(namespace: string, name: string): Promise<ModelUsage | undefined>;
  /** PUT with the object's resourceVersion as precondition; throws `{ status: 409 }` on a conflict. */
  replace(namespace: string, object: ModelUsage): Promise<ModelUsage>;
}

export interface UsageStoreOptions {
  objects: UsageObjects;
  /** The pod's name, recorded in each object (`spec.replica`). */
  replica: string;
  now?: () => number;
  /** This process's part of the object names; random per process start. */
  processId?: string;
  onWriteError?: (run: RunRef, err: unknown) => void;
}

/** While calls of a run are in flight its object is rewritten this often (IN_FLIGHT_STALE_MS reads it). */
export const HEARTBEAT_MS = 60_000;
/** A run with nothing in flight and nothing unwritten is forgotten after this long. */
const IDLE_FORGET_MS = 10 * 60_000;
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;
const MAX_MODELS = 64;
/** The object's schema holds this many refused destinations; the count goes on past them. */
export const MAX_EGRESS_DESTINATIONS = 10;
/** A model id as providers write them; anything else is recorded as `other`. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$/;

interface RunTotals {
  run: RunRef;
  /** Unknown while the run's only records are egress refusals. */
  vendor?: GatewayVendor;
  name: string;
  station?: string;
  /** Micro-dollars: the metered calls at the gateway's prices, and the reservations in flight. */
  meteredMicro: number;
  reservedMicro: number;
  calls: number;
  incompleteCalls: number;
  inFlight: number;
  models: Map<string, ModelUsageTokens>;
  egressRefused: number;
  /** The first distinct destinations refused (MAX_EGRESS_DESTINATIONS), keyed by role and destination. */
  egressDestinations: Map<string, ModelUsageEgressRefusal>;
  resourceVersion?: string;
  /** Something changed since the last write that landed. */
  dirty: boolean;
  writing: boolean;
  /** Resolved when a write that includes everything before them lands. */
  waiters: (() => void)[];
  retryMs: number;
  retryTimer?: NodeJS.Timeout;
  writtenAt: number;
}

const isConflict = (err: unknown) => (err as { status?: number })?.status === 409;
const toMicro = (usd: number) => (Number.isFinite(usd) && usd > 0 ? Math.round(usd * 1_000_000) : 0);

export class ModelUsageStore implements UsageStore {
  private readonly runs = new Map<string, RunTotals>();
  private readonly now: () => number;
  private readonly processId: string;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly o: UsageStoreOptions) {
    this.now = o.now ?? Date.now;
    this.processId = o.processId ?? randomBytes(4).toString("hex");
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  started(run: RunRef, vendor: GatewayVendor): void {
    const t = this.totals(run, vendor);
    t.inFlight++;
    void this.flush(t);
  }

  /**
   * Reserves a request's worst case against its Station's budget: resolves once the record holding
   * the reservation is written, so every other process that lists the Station's records from then
   * on counts it (docs/gateway.md#budgets-in-flight).
   */
  reserve(run: RunRef, vendor: GatewayVendor, station: string, usd: number): Promise<void> {
    const t = this.totals(run, vendor);
    t.station = station;
    t.reservedMicro += toMicro(usd);
    return this.flush(t);
  }

  /** Takes back a reservation whose request was not forwarded (the budget refused it). */
  release(run: RunRef, vendor: GatewayVendor, usd: number): Promise<void> {
    const t = this.totals(run, vendor);
    t.reservedMicro = Math.max(0, t.reservedMicro - toMicro(usd));
    return this.flush(t);
  }

  record(entry: UsageRecord): Promise<void> {
    const t = this.totals(entry.run, entry.vendor);
    t.inFlight = Math.max(0, t.inFlight - 1);
    t.reservedMicro = Math.max(0, t.reservedMicro - toMicro(entry.reservedUsd ?? 0));
    t.meteredMicro += toMicro(entry.costUsd ?? 0);
    t.calls++;
    if (!entry.complete || entry.unreadable !== undefined) t.incompleteCalls++;
    const model = entry.model ?? entry.requestedModel ?? "unknown";
    if (entry.usage) this.add(t, model, entry.usage);
    return this.flush(t);
  }

  /**
   * Counts a refusal of the egress proxy (docs/gateway.md#egress) into the run's record, for the
   * controller to sum into the Agent's status when the run ends. Resolves once written.
   */
  egressRefused(run: RunRef, refusal: ModelUsageEgressRefusal): Promise<void> {
    const t = this.totals(run, undefined);
    t.egressRefused++;
    const key = `${refusal.role} ${refusal.destination}`;
    if (!t.egressDestinations.has(key) && t.egressDestinations.size < MAX_EGRESS_DESTINATIONS) {
      t.egressDestinations.set(key, { ...refusal, reason: refusal.reason.slice(0, 1024) });
    }
    return this.flush(t);
  }

  /** Every run's totals written (a graceful stop: the proxy has drained its calls). */
  async drain(): Promise<void> {
    clearInterval(this.heartbeat);
    await Promise.all([...this.runs.values()].filter((t) => t.dirty || t.writing).map((t) => this.flush(t)));
  }

  private totals(run: RunRef, vendor: GatewayVendor | undefined): RunTotals {
    let t = this.runs.get(run.uid);
    if (t) {
      t.vendor ??= vendor;
    } else {
      t = {
        run,
        ...(vendor !== undefined ? { vendor } : {}),
        name: `${run.uid}-${this.processId}`,
        calls: 0,
        incompleteCalls: 0,
        inFlight: 0,
        meteredMicro: 0,
        reservedMicro: 0,
        models: new Map(),
        egressRefused: 0,
        egressDestinations: new Map(),
        dirty: false,
        writing: false,
        waiters: [],
        retryMs: RETRY_MIN_MS,
        writtenAt: this.now(),
      };
      this.runs.set(run.uid, t);
    }
    return t;
  }

  private add(t: RunTotals, named: string, u: NonNullable<UsageRecord["usage"]>): void {
    // The request names its model, so the name is the client's: one the object's schema would
    // refuse must not keep the run's totals from being written.
    const model = MODEL_ID.test(named) ? named : "other";
    // More models than an object holds (a forged model name per call): the rest share one entry,
    // priced at the vendor's highest rates by the controller, so nothing is lost or cheaper.
    const key = t.models.has(model) || t.models.size < MAX_MODELS - 1 ? model : "other";
    t.models.set(key, addModelTokens(key, t.models.get(key), u));
  }

  /** Resolves once a write holding everything recorded so far has landed. */
  private flush(t: RunTotals): Promise<void> {
    t.dirty = true;
    const done = new Promise<void>((resolve) => t.waiters.push(resolve));
    if (!t.writing && t.retryTimer === undefined) void this.write(t);
    return done;
  }

  private async write(t: RunTotals): Promise<void> {
    t.writing = true;
    while (t.dirty) {
      t.dirty = false;
      const waiters = t.waiters.splice(0);
      try {
        await this.put(t);
        t.retryMs = RETRY_MIN_MS;
        t.writtenAt = this.now();
        for (const w of waiters) w();
      } catch (err) {
        // Kept, never dropped: the totals are written again after a pause, with whatever came since.
        t.waiters.unshift(...waiters);
        t.dirty = true;
        t.writing = false;
        this.o.onWriteError?.(t.run, err);
        t.retryTimer = setTimeout(() => {
          t.retryTimer = undefined;
          if (!t.writing) void this.write(t);
        }, t.retryMs);
        t.retryTimer.unref();
        t.retryMs = Math.min(RETRY_MAX_MS, t.retryMs * 2);
        return;
      }
    }
    t.writing = false;
  }

  private async put(t: RunTotals): Promise<void> {
    const ns = t.run.namespace;
    if (t.resourceVersion === undefined) {
      try {
        t.resourceVersion = (await this.o.objects.create(ns, this.object(t))).metadata.resourceVersion;
        return;
      } catch (err) {
        if (!isConflict(err)) throw err;
        // This process wrote the object before and forgot the run (idle): carry its totals on.
        const existing = await this.o.objects.get(ns, t.name);
        if (!existing) throw err;
        this.adopt(t, existing);
      }
    }
    try {
      t.resourceVersion = (await this.o.objects.replace(ns, this.object(t))).metadata.resourceVersion;
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Only this process writes the object: a conflict is a write of ours whose answer was lost.
      const existing = await this.o.objects.get(ns, t.name);
      t.resourceVersion = existing?.metadata.resourceVersion;
      throw err;
    }
  }

  private adopt(t: RunTotals, existing: ModelUsage): void {
    t.resourceVersion = existing.metadata.resourceVersion;
    t.calls += existing.spec.calls;
    t.meteredMicro += toMicro(Number(existing.spec.meteredUSD ?? "0"));
    t.station ??= existing.spec.station;
    t.incompleteCalls += existing.spec.incompleteCalls ?? 0;
    t.vendor ??= existing.spec.vendor;
    for (const m of existing.spec.models) this.add(t, m.model, m);
    t.egressRefused += existing.spec.egress?.refused ?? 0;
    // The written destinations came first; those refused since follow them.
    const since = [...t.egressDestinations.entries()];
    t.egressDestinations = new Map();
    for (const d of existing.spec.egress?.destinations ?? [])
      t.egressDestinations.set(`${d.role} ${d.destination}`, d);
    for (const [key, d] of since) {
      if (t.egressDestinations.size < MAX_EGRESS_DESTINATIONS && !t.egressDestinations.has(key)) {
        t.egressDestinations.set(key, d);
      }
    }
  }

  private object(t: RunTotals): ModelUsage {
    return {
      apiVersion: "agents.re-cinq.com/v1beta1",
      kind: "ModelUsage",
      metadata: {
        name: t.name,
        namespace: t.run.namespace,
        labels: {
          [LABEL_AGENT_UID]: t.run.uid,
          [LABEL_COMPONENT]: "gateway",
          ...(t.station !== undefined ? { [LABEL_STATION]: shortenName(t.station) } : {}),
        },
        ...(t.resourceVersion !== undefined ? { resourceVersion: t.resourceVersion } : {}),
        ownerReferences: [
          { apiVersion: "agents.re-cinq.com/v1beta1", kind: "Agent", name: t.run.name, uid: t.run.uid },
        ],
      },
      spec: {
        agent: { name: t.run.name, uid: t.run.uid },
        ...(t.vendor !== undefined ? { vendor: t.vendor } : {}),
        ...(t.station !== undefined ? { station: t.station } : {}),
        replica: this.o.replica,
        calls: t.calls,
        incompleteCalls: t.incompleteCalls,
        inFlight: t.inFlight,
        meteredUSD: formatUsd(t.meteredMicro / 1_000_000),
        reservedUSD: formatUsd(t.reservedMicro / 1_000_000),
        models: [...t.models.values()],
        ...(t.egressRefused > 0
          ? { egress: { refused: t.egressRefused, destinations: [...t.egressDestinations.values()] } }
          : {}),
        updatedAt: new Date(this.now()).toISOString(),
      },
    };
  }

  /** Rewrites runs with calls in flight (so the controller sees a live process) and forgets idle ones. */
  private beat(): void {
    const now = this.now();
    for (const [uid, t] of this.runs) {
      if (t.inFlight > 0 || t.reservedMicro > 0) void this.flush(t);
      else if (!t.dirty && !t.writing && t.retryTimer === undefined && now - t.writtenAt > IDLE_FORGET_MS) {
        this.runs.delete(uid);
      }
    }
  }
}
