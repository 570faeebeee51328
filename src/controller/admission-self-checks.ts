/**
 * The self-checks of a replica that serves the admission webhook (components/admission): that
 * its NetworkPolicy keeps the pod network away from the webhook port (src/admission/pod-network-check.ts).
 */
import {
  ADMISSION_NETWORK_POLICY,
  type AdmissionPolicyView,
  podNetworkProblem,
} from "../admission/pod-network-check.js";
import type { KubeClient } from "../kube/client.js";
import { NETWORK_POLICIES } from "../kube/resources.js";
import type { SelfCheck } from "./self-checks.js";

export function admissionNetworkCheck(
  client: Pick<KubeClient, "get">,
  o: { namespace: string; podIp: string; port: number },
): SelfCheck {
  return {
    name: `NetworkPolicy ${ADMISSION_NETWORK_POLICY}`,
    async run() {
      // Outside a cluster (no POD_IP) there is no pod network to judge from.
      if (o.podIp === "") return undefined;
      const policy = await client.get<AdmissionPolicyView>(
        NETWORK_POLICIES,
        o.namespace,
        ADMISSION_NETWORK_POLICY,
      );
      const problem = podNetworkProblem(policy, o.podIp, o.port);
      return problem === undefined ? undefined : { reason: "AdmissionNetworkOpen", message: problem };
    },
  };
}
