/**
 * The self-checks of a replica that serves the admission webhook (components/admission): that
 * the NetworkPolicies selecting the controller pods (its own and any other) keep the pod network
 * away from the webhook port (src/admission/pod-network-check.ts)
 * and that its serving certificate is one the API server accepts (src/admission/certificate-check.ts).
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { certificateProblem, webhookHost } from "../admission/certificate-check.js";
import {
  ADMISSION_NETWORK_POLICY,
  type AdmissionPolicyView,
  controllerNetworkProblem,
} from "../admission/pod-network-check.js";
import type { KubeClient } from "../kube/client.js";
import { NETWORK_POLICIES, PODS } from "../kube/resources.js";
import type { SelfCheck } from "./self-checks.js";

/** The label every controller pod carries (deploy/base/controller-deployment.yaml). */
const CONTROLLER_LABELS = { "agents.re-cinq.com/component": "controller" };

export function admissionNetworkCheck(
  client: Pick<KubeClient, "list">,
  o: { namespace: string; podIp: string; podName?: string; port: number },
): SelfCheck {
  return {
    name: `NetworkPolicy ${ADMISSION_NETWORK_POLICY}`,
    async run() {
      // Outside a cluster (no POD_IP) there is no pod network to judge from.
      if (o.podIp === "") return undefined;
      const [policies, pods] = await Promise.all([
        client.list<AdmissionPolicyView>(NETWORK_POLICIES, o.namespace),
        client.list<V1Pod>(PODS, o.namespace, { labelSelector: "agents.re-cinq.com/component=controller" }),
      ]);
      // The pod's own labels, as the policies' selectors see them; the Deployment's if not found.
      const self = pods.items.find((p) => p.metadata?.name === o.podName);
      const labels = self?.metadata?.labels ?? CONTROLLER_LABELS;
      const problem = controllerNetworkProblem(policies.items, labels, o.podIp, o.port);
      return problem === undefined ? undefined : { reason: "AdmissionNetworkOpen", message: problem };
    },
  };
}

/** The serving certificate in ADMISSION_CERT_DIR, as the API server will judge it. */
export function admissionCertificateCheck(o: {
  certFile: string;
  service: string;
  namespace: string;
  now?: () => number;
}): SelfCheck {
  const host = webhookHost(o.service, o.namespace);
  return {
    name: `the admission webhook's certificate ${o.certFile}`,
    async run() {
      const key = await readFile(join(dirname(o.certFile), "tls.key")).catch(() => undefined);
      return certificateProblem(await readFile(o.certFile), host, (o.now ?? Date.now)(), key);
    },
  };
}
