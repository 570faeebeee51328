/**
 * What the gateway's egress proxy refused a run's programs (docs/gateway.md#egress), summed over
 * the run's ModelUsage objects (one per gateway process) into the Agent's status.egress. Pure.
 */
import type { AgentStatus, ModelUsageSpec } from "../types.js";

export type EgressStatus = NonNullable<AgentStatus["egress"]>;

/** The destinations status.egress lists (its schema's maxItems). */
export const MAX_STATUS_DESTINATIONS = 10;

/** The refusals of one run, or undefined when none of its records holds one. */
export function sumEgressRefusals(specs: readonly ModelUsageSpec[]): EgressStatus | undefined {
  let refused = 0;
  const destinations = new Set<string>();
  for (const s of specs) {
    refused += s.egress?.refused ?? 0;
    for (const d of s.egress?.destinations ?? []) {
      if (destinations.size < MAX_STATUS_DESTINATIONS) destinations.add(`${d.role} ${d.destination}`);
    }
  }
  if (refused === 0) return undefined;
  return { refused, ...(destinations.size > 0 ? { destinations: [...destinations].sort() } : {}) };
}
