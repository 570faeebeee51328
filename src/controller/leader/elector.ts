/**
 * Leader election on the coordination.k8s.io/v1 Lease `agent-controller`: the loop around the
 * pure `decide` (decide.ts).
 *
 * Guarantees:
 * - Every write to the Lease is guarded by its resourceVersion, so of two replicas that read the
 *   same Lease and both try to create, renew or take it over, exactly one write succeeds and the
 *   other steps down (or stays standby) on its 409; a standby takes over only after the
 *   (holder, renewTime) pair it reads has stayed unchanged for the whole lease duration on its
 *   own clock; and a leader steps down at once when a renewal fails for any reason (conflict,
 *   timeout, API unreachable) or when it reads the Lease held by someone else.
 * - Each round (read + write) is bounded by one tick, so a leader that cannot renew stops
 *   leading at most two ticks (10 s) after its last successful renewal, before a standby can
 *   judge that renewal expired (15 s by the standby's clock, counted from when it saw it) —
 *   provided both processes run and their clocks advance at the same rate.
 *
 * Not guaranteed:
 * - Mutual exclusion is not absolute. A leader cut off from the API server keeps reconciling
 *   until its next round discovers the failure (up to two ticks); if its
 *   process is paused (GC stop, SIGSTOP, a slow node) for longer than the lease duration it can
 *   resume still believing it leads while a standby has taken over. Clock *rate* differences
 *   between replicas shorten or lengthen the effective lease. Reconcile correctness must
 *   therefore never depend on leadership: Job creation is keyed on the Agent name and idempotent
 *   (409 AlreadyExists), and status writes carry the Agent's resourceVersion, so an overlap
 *   produces no second Job and no lost update, only redundant work.
 * - Handover time is bounded by roughly lease duration + one tick after the old leader's last
 *   successful renewal (immediate when the old leader released the Lease on shutdown).
 * - No fencing token is passed to writes; leadership is an efficiency measure, not a lock.
 */
import type { KubeClient } from "../../kube/client.js";
import { LEASES } from "../../kube/resources.js";
import { decide, type LeaseView, type Observation } from "./decide.js";

export const LEASE_NAME = "agent-controller";

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface ElectorOptions {
  client: Pick<KubeClient, "get" | "create" | "mergePatch">;
  namespace: string;
  identity: string;
  leaseName?: string;
  leaseDurationMs: number;
  tickMs: number;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  log?: (msg: string) => void;
}

/** Lease times are MicroTime: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export class LeaderElector {
  private leading = false;
  private observation: Observation | undefined;
  private lastTickOkAt: number | undefined;
  private readonly name: string;

  constructor(private readonly o: ElectorOptions) {
    this.name = o.leaseName ?? LEASE_NAME;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** The local time of the last tick that reached the API server, for health checks. */
  get lastSuccessfulTick(): number | undefined {
    return this.lastTickOkAt;
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tick();
      await this.o.sleep(this.o.tickMs, signal);
    }
  }

  /**
   * One read-decide-write round. Never throws. The whole round must finish within one tick: a
   * leader whose renewal hangs gives up after tickMs and steps down, i.e. at most two ticks after
   * its last successful renewal, which is before any standby can see that renewal expire.
   */
  async tick(): Promise<void> {
    const signal = AbortSignal.timeout(this.o.tickMs);
    let lease: Lease | undefined;
    try {
      lease = await this.o.client.get<Lease>(LEASES, this.o.namespace, this.name, signal);
    } catch (err) {
      this.o.log?.(`lease read failed: ${String(err)}`);
      this.stepDown();
      return;
    }
    const view: LeaseView | undefined = lease
      ? {
          holderIdentity: lease.spec?.holderIdentity ?? "",
          renewTime: lease.spec?.renewTime ?? "",
          resourceVersion: lease.metadata.resourceVersion ?? "",
        }
      : undefined;
    const now = this.o.now();
    const d = decide({
      identity: this.o.identity,
      lease: view,
      previous: this.observation,
      now,
      leaseDurationMs: this.o.leaseDurationMs,
    });
    this.observation = d.observation;
    if (d.action === "standby") {
      this.lastTickOkAt = now;
      this.stepDown();
      return;
    }
    const stamp = microTime(now);
    const spec = lease?.spec ?? {};
    const next: Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: this.name,
        namespace: this.o.namespace,
        resourceVersion: lease?.metadata.resourceVersion,
      },
      spec: {
        holderIdentity: this.o.identity,
        leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
        acquireTime: d.action === "renew" ? (spec.acquireTime ?? stamp) : stamp,
        renewTime: stamp,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (d.action === "takeover" ? 1 : 0),
      },
    };
    try {
      if (d.action === "create") {
        delete next.metadata.resourceVersion;
        const res = await this.o.client.create(LEASES, this.o.namespace, next, signal);
        // Someone else created it between our read and write: not ours.
        if (!res.created) throw new Error("lease was created by another replica");
      } else {
        // The resourceVersion in the patch is the precondition: a concurrent writer makes this a 409.
        await this.o.client.mergePatch(
          LEASES,
          this.o.namespace,
          this.name,
          { metadata: { resourceVersion: next.metadata.resourceVersion }, spec: next.spec },
          signal,
        );
      }
    } catch (err) {
      this.o.log?.(`lease ${d.action} failed, standing by: ${String(err)}`);
      this.stepDown();
      return;
    }
    this.lastTickOkAt = now;
    // Our own write is the new observation: we must not count time since someone else's renew.
    this.observation = { holderIdentity: this.o.identity, renewTime: stamp, firstSeenAt: now };
    if (!this.leading) {
      this.leading = true;
      this.o.log?.(`lease ${this.name}: ${d.action} → leading as ${this.o.identity}`);
      this.o.onStartedLeading();
    }
  }

  /** Gives the Lease up (empty holder) so a standby can take it at its next tick. Best effort. */
  async release(): Promise<void> {
    if (!this.leading) return;
    this.stepDown();
    try {
      const lease = await this.o.client.get<Lease>(LEASES, this.o.namespace, this.name);
      if (!lease || lease.spec?.holderIdentity !== this.o.identity) return;
      await this.o.client.mergePatch(LEASES, this.o.namespace, this.name, {
        metadata: { resourceVersion: lease.metadata?.resourceVersion },
        spec: { holderIdentity: "", renewTime: microTime(this.o.now()) },
      });
    } catch (err) {
      this.o.log?.(`lease release failed (a standby takes over after the lease duration): ${String(err)}`);
    }
  }

  private stepDown(): void {
    if (!this.leading) return;
    this.leading = false;
    this.o.log?.(`lease ${this.name}: stepped down`);
    this.o.onStoppedLeading();
  }
}
