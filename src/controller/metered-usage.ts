/**
 * The gather's read of a finished gateway run's ModelUsage objects (docs/gateway.md#metering): one
 * LIST by the run's uid label, fresh from the API server when the run's Job has finished, so the
 * price never comes from a cache that has not seen the gateway's last write. While a live gateway
 * process still reads a call of the run, the reconcile fails and is retried, so the run is priced
 * once its calls are recorded (bounded by METERING_WAIT_MS).
 */
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

export async function readMetered(
  client: Pick<KubeClient, "list">,
  namespace: string,
  uid: string,
  /** The vendor the Job's annotation names; undefined when the Job is gone. */
  jobVendor: GatewayVendor | undefined,
  jobFinishedAt: number | undefined,
  now: number,
): Promise<MeteredInput | undefined> {
  const items = (
    await client.list<ModelUsage>(MODEL_USAGES, namespace, { labelSelector: `${LABEL_AGENT_UID}=${uid}` })
  ).items.filter((u) => u.spec?.agent?.uid === uid);
  const vendor = jobVendor ?? items.map((u) => u.spec.vendor).find(isGatewayVendor);
  // A Job that is gone and left no record: nothing says the run was the gateway's.
  if (vendor === undefined) return undefined;
  const specs = items.map((u) => u.spec);
  const settled = meteringState(specs, jobFinishedAt, now);
  if (settled.state === "wait") {
    throw new MeteringInFlight(
      `the model gateway is still reading ${settled.calls} call(s) of this run; pricing it once they are recorded`,
    );
  }
  return {
    vendor,
    ...sumMetered(specs),
    ...(settled.state === "unsettled" ? { unsettledCalls: settled.calls } : {}),
  };
}
