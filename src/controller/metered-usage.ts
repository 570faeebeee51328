/**
 * The gather's read of a finished gateway run's ModelUsage objects (docs/gateway.md#metering): one
 * LIST by the run's uid label, fresh from the API server when the run's Job has finished, so the
 * price never comes from a cache that has not seen the gateway's last write. While a live gateway
 * process still reads a call of the run, the reconcile fails and is retried, so the run is priced
 * once its calls are recorded (bounded by METERING_WAIT_MS). The same objects carry what the
 * gateway's egress proxy refused the run (docs/gateway.md#egress).
 */

import { type EgressStatus, sumEgressRefusals } from "../core/egress/refusals.js";
import type { MeteredInput } from "../core/input.js";
import { meteringState, sumMetered } from "../core/pricing/metered.js";
import { type GatewayVendor, isGatewayVendor } from "../core/run-job/gateway-credential.js";
import { LABEL_AGENT_UID } from "../core/run-job/layout.js";
import type { ModelUsage } from "../core/types.js";
import type { KubeClient } from "../kube/client.js";
import { MODEL_USAGES } from "../kube/resources.js";

/** Thrown to retry the reconcile: the gateway is still reading calls of the run. */
export class MeteringInFlight extends Error {
  override name = "MeteringInFlight";
}

export interface GatewayRecords {
  /** The run's metered calls; undefined when nothing says the run called its model through the gateway. */
  metered?: MeteredInput;
  /** What the egress proxy refused the run; undefined when it refused nothing. */
  egress?: EgressStatus;
}

export async function readGatewayRecords(
  client: Pick<KubeClient, "list">,
  namespace: string,
  uid: string,
  /**
   * The vendor the Job's annotation names. Undefined when the Job is gone (the records say whether
   * the run was metered) or was not metered (`metered: false`: only refusals are read).
   */
  job: { vendor: GatewayVendor } | { metered: false } | undefined,
  jobFinishedAt: number | undefined,
  now: number,
): Promise<GatewayRecords> {
  const items = (
    await client.list<ModelUsage>(MODEL_USAGES, namespace, { labelSelector: `${LABEL_AGENT_UID}=${uid}` })
  ).items.filter((u) => u.spec?.agent?.uid === uid);
  const specs = items.map((u) => u.spec);
  const egress = sumEgressRefusals(specs);
  const withEgress = egress !== undefined ? { egress } : {};
  if (job !== undefined && "metered" in job) return withEgress;
  const vendor = job?.vendor ?? specs.map((s) => s.vendor).find(isGatewayVendor);
  // A Job that is gone and left no record of a call: nothing says the run was metered.
  if (vendor === undefined) return withEgress;
  const settled = meteringState(specs, jobFinishedAt, now);
  if (settled.state === "wait") {
    throw new MeteringInFlight(
      `the model gateway is still reading ${settled.calls} call(s) of this run; pricing it once they are recorded`,
    );
  }
  return {
    metered: {
      vendor,
      ...sumMetered(specs),
      ...(settled.state === "unsettled" ? { unsettledCalls: settled.calls } : {}),
    },
    ...withEgress,
  };
}
