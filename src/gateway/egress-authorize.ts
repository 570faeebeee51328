/**
 * Who may reach what through the egress proxy (docs/gateway.md#egress): the proxy credential must
 * be an egress credential this gateway's key signed, its run still active (the same run lookup as
 * model calls: an ended, deleted or foreign run's programs reach nothing), and the destination
 * among those the controller signed into it for that program's role. The listener
 * (egress/proxy-server.ts) asks this before it resolves or dials anything.
 */
import { verifyEgressCredential } from "../core/egress/credential.js";
import { destinationAllowed } from "../core/egress/destinations.js";
import type { EgressDecision, EgressWho } from "./egress/proxy-server.js";
import { type RunLookup, RunUnconfirmedError } from "./ports.js";

const agentOf = (w: EgressWho) => `Agent ${w.namespace}/${w.name}`;
/** Destinations named in a refusal; the rest counted, so a long allow list keeps the text short. */
const LISTED = 8;
const listed = (d: readonly string[]) =>
  d.length === 0
    ? "nothing"
    : d.slice(0, LISTED).join(", ") + (d.length > LISTED ? ` and ${d.length - LISTED} more` : "");

export function egressAuthorizer(o: {
  credentialKey: Uint8Array;
  runs: Pick<RunLookup, "runState">;
}): (credential: string, host: string, port: number) => Promise<EgressDecision> {
  return async (credential, host, port) => {
    const checked = verifyEgressCredential(o.credentialKey, credential);
    if (!checked.ok) {
      return {
        ok: false,
        status: 407,
        reason:
          checked.reason === "malformed"
            ? "the proxy credential is not an egress credential of this gateway (agx1.…)"
            : "the proxy credential's signature does not hold (forged, or issued under another key)",
      };
    }
    const { role, destinations, ...run } = checked.claims;
    const who: EgressWho = { ...run, role };
    let state: Awaited<ReturnType<RunLookup["runState"]>>;
    try {
      state = await o.runs.runState(run);
    } catch (err) {
      // Fail closed, as for model calls: a run that cannot be confirmed reaches nothing.
      const cause = err instanceof RunUnconfirmedError ? err.message : "the run lookup failed";
      return {
        ok: false,
        status: 503,
        who,
        reason: `cannot confirm that ${agentOf(who)} is still running (${cause})`,
      };
    }
    if (state.state === "terminal") {
      return { ok: false, status: 403, who, reason: `the run has ended (phase ${state.phase})` };
    }
    if (state.state === "deleted") {
      return { ok: false, status: 403, who, reason: `the Agent (uid ${run.uid}) no longer exists` };
    }
    if (state.state === "foreign") {
      return {
        ok: false,
        status: 403,
        who,
        reason: `the Agent is not in namespace ${state.served}, the only one this gateway serves`,
      };
    }
    if (!destinationAllowed(destinations, host, port)) {
      const station = role === "agent" ? "; its Station may list more hosts in spec.egress.allowHosts" : "";
      return {
        ok: false,
        status: 403,
        who,
        reason: `not a destination of the ${role} (it may reach ${listed(destinations)})${station}`,
      };
    }
    return { ok: true, who };
  };
}
