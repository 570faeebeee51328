/**
 * Whether the admission NetworkPolicy keeps the pod network away from the webhook port, judged
 * from where the controller stands (docs/security.md#admission-webhook). The policy opens the
 * `admission` port to `0.0.0.0/0` except the pod CIDR the platform team sets; the shipped value
 * is a common default, and a cluster whose pods live elsewhere is left open without a word. The
 * controller's own pod address is on the pod network, so if the policy would let that address
 * in, it lets every pod in. Pure: the policy as read, the pod's address; a sentence or nothing.
 */
import { BlockList, isIP } from "node:net";

/** The component's NetworkPolicy (deploy/components/admission/network-policy.yaml). */
export const ADMISSION_NETWORK_POLICY = "agent-controller-admission-ingress";
const ADMISSION_PORT_NAME = "admission";

interface IpBlock {
  cidr?: string;
  except?: string[];
}
interface PolicyPeer {
  ipBlock?: IpBlock;
  podSelector?: unknown;
  namespaceSelector?: unknown;
}
interface PolicyPort {
  port?: number | string;
}
interface IngressRule {
  from?: PolicyPeer[];
  ports?: PolicyPort[];
}
/** The fields of a NetworkPolicy the check reads. */
export interface AdmissionPolicyView {
  spec?: { ingress?: IngressRule[] };
}

function blockOf(cidrs: readonly string[]): BlockList | string {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split("/");
    const family = isIP(net ?? "");
    const prefix = Number(bits);
    if (family === 0 || bits === undefined || !Number.isInteger(prefix)) return cidr;
    list.addSubnet(net ?? "", prefix, family === 6 ? "ipv6" : "ipv4");
  }
  return list;
}

const opensAdmissionPort = (rule: IngressRule, port: number): boolean =>
  rule.ports === undefined ||
  rule.ports.some((p) => p.port === undefined || p.port === ADMISSION_PORT_NAME || p.port === port);

/**
 * Why the pod network can reach the webhook port, or undefined when the policy keeps it out.
 * `policy` undefined: the policy does not exist.
 */
export function podNetworkProblem(
  policy: AdmissionPolicyView | undefined,
  podIp: string,
  port: number,
): string | undefined {
  const family = isIP(podIp);
  if (family === 0) return undefined;
  const type = family === 6 ? "ipv6" : "ipv4";
  const fix = `set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)`;
  if (policy === undefined)
    return `NetworkPolicy ${ADMISSION_NETWORK_POLICY} does not exist: every pod can reach the admission webhook's port ${port}; apply deploy/components/admission and ${fix}`;
  for (const rule of policy.spec?.ingress ?? []) {
    if (!opensAdmissionPort(rule, port)) continue;
    // A rule with no peers admits everyone; a pod or namespace selector admits pods by design.
    if (rule.from === undefined || rule.from.length === 0)
      return `NetworkPolicy ${ADMISSION_NETWORK_POLICY} opens the admission webhook's port ${port} to every source: every pod can reach it; ${fix}`;
    for (const peer of rule.from) {
      const block = peer.ipBlock;
      if (block?.cidr === undefined) continue;
      const inside = blockOf([block.cidr]);
      const except = blockOf(block.except ?? []);
      if (typeof inside === "string" || typeof except === "string") continue;
      if (!inside.check(podIp, type) || except.check(podIp, type)) continue;
      const excepted = (block.except ?? []).join(", ") || "nothing";
      return `this controller pod's address ${podIp} is not in the pod CIDR excepted by NetworkPolicy ${ADMISSION_NETWORK_POLICY} (${block.cidr} except ${excepted}): every pod on the pod network can reach the admission webhook's port ${port}; ${fix}`;
    }
  }
  return undefined;
}
