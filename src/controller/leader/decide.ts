/**
 * Leader-election decision for the coordination.k8s.io/v1 Lease `agent-controller`, as a pure
 * function of (what we observed so far, what we read now, our local clock).
 *
 * Expiry is judged against the local clock: we remember when *we* first saw the current
 * (holder, renewTime) pair, and only when that pair has not changed for the lease duration do we
 * consider it expired. The remote renewTime is compared for equality only, never subtracted from
 * our clock, so clock skew between replicas cannot cause a premature takeover.
 */

/** The fields of a Lease the decision reads. */
export interface LeaseView {
  holderIdentity: string;
  /** Opaque here: only compared for change. */
  renewTime: string;
  resourceVersion: string;
}

/** What we carry from tick to tick. */
export interface Observation {
  holderIdentity: string;
  renewTime: string;
  /** Our local clock (ms) when we first saw this holder/renewTime pair. */
  firstSeenAt: number;
}

export type LeaderAction =
  /** No Lease exists: create one held by us. */
  | "create"
  /** We hold it: renew renewTime. */
  | "renew"
  /** Someone else held it but did not renew within the lease duration (or released it). */
  | "takeover"
  /** Someone else holds a still-valid Lease. */
  | "standby";

export interface Decision {
  action: LeaderAction;
  observation: Observation | undefined;
}

export function decide(input: {
  identity: string;
  lease: LeaseView | undefined;
  previous: Observation | undefined;
  now: number;
  leaseDurationMs: number;
}): Decision {
  const { identity, lease, previous, now, leaseDurationMs } = input;
  if (!lease) return { action: "create", observation: undefined };

  const unchanged =
    previous !== undefined &&
    previous.holderIdentity === lease.holderIdentity &&
    previous.renewTime === lease.renewTime;
  const observation: Observation = unchanged
    ? previous
    : { holderIdentity: lease.holderIdentity, renewTime: lease.renewTime, firstSeenAt: now };

  if (lease.holderIdentity === identity) return { action: "renew", observation };
  // A released Lease (empty holder) is free to take at once.
  if (lease.holderIdentity === "") return { action: "takeover", observation };
  if (now - observation.firstSeenAt >= leaseDurationMs) return { action: "takeover", observation };
  return { action: "standby", observation };
}
