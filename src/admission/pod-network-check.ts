/**
 * Whether the NetworkPolicies keep the pod network away from the webhook port, judged from where
 * the controller stands (docs/security.md#admission-webhook). Policies add up: every Ingress
 * policy that selects the controller pod opens what its rules open, so each is judged, not only
 * the component's own. That one opens the `admission` port to `0.0.0.0/0` except the pod CIDR the
 * platform team sets; the shipped value is a common default, and a cluster whose pods live
 * elsewhere is left open without a word. The controller's own pod address is on the pod network,
 * so if a policy would let that address in, it lets every pod in. Pure: the policies as read, the
 * pod's labels and address; a sentence or nothing.
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
  endPort?: number;
}
interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}
interface IngressRule {
  from?: PolicyPeer[];
  ports?: PolicyPort[];
}
/** The fields of a NetworkPolicy the check reads. */
export interface AdmissionPolicyView {
  metadata?: { name?: string };
  spec?: { podSelector?: LabelSelector; policyTypes?: string[]; ingress?: IngressRule[] };
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
  rule.ports.length === 0 ||
  rule.ports.some(
    (p) =>
      p.port === undefined ||
      p.port === ADMISSION_PORT_NAME ||
      p.port === port ||
      (typeof p.port === "number" && p.endPort !== undefined && p.port <= port && port <= p.endPort),
  );

/** Whether a label selector selects `labels` (an empty selector selects every pod). */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string>,
): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const req of selector?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key);
    const value = labels[req.key];
    const inValues = has && (req.values ?? []).includes(value ?? "");
    if (req.operator === "In" && !inValues) return false;
    if (req.operator === "NotIn" && inValues) return false;
    if (req.operator === "Exists" && !has) return false;
    if (req.operator === "DoesNotExist" && has) return false;
    if (!["In", "NotIn", "Exists", "DoesNotExist"].includes(req.operator)) return false;
  }
  return true;
}

/** Whether the policy restricts the ingress of a pod with `labels` (policyTypes default to Ingress). */
function governsIngress(policy: AdmissionPolicyView, labels: Record<string, string>): boolean {
  const types = policy.spec?.policyTypes;
  const ingress = types === undefined || types.length === 0 || types.includes("Ingress");
  return ingress && selectorMatches(policy.spec?.podSelector ?? {}, labels);
}

/**
 * Why the pod network can reach the webhook port through any of `policies` (every NetworkPolicy
 * of the namespace), or undefined when every policy that selects the controller pod (`podLabels`)
 * keeps it out. With none selecting it, nothing isolates the pod.
 */
export function controllerNetworkProblem(
  policies: readonly AdmissionPolicyView[],
  podLabels: Record<string, string>,
  podIp: string,
  port: number,
): string | undefined {
  if (isIP(podIp) === 0) return undefined;
  const selecting = policies.filter((p) => governsIngress(p, podLabels));
  if (selecting.length === 0) {
    const own = policies.find((p) => p.metadata?.name === ADMISSION_NETWORK_POLICY);
    if (own === undefined) return podNetworkProblem(undefined, podIp, port);
    return `NetworkPolicy ${ADMISSION_NETWORK_POLICY} does not select this controller pod: every pod can reach the admission webhook's port ${port}; make its podSelector match the controller pods (docs/security.md#admission-webhook)`;
  }
  // The component's own policy first: its words name the fix the platform team most likely needs.
  const ordered = [
    ...selecting.filter((p) => p.metadata?.name === ADMISSION_NETWORK_POLICY),
    ...selecting.filter((p) => p.metadata?.name !== ADMISSION_NETWORK_POLICY),
  ];
  for (const policy of ordered) {
    const problem = podNetworkProblem(policy, podIp, port, policy.metadata?.name ?? "(unnamed)");
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Why the pod network can reach the webhook port through one policy, or undefined when it keeps
 * it out. `policy` undefined: the component's policy does not exist.
 */
export function podNetworkProblem(
  policy: AdmissionPolicyView | undefined,
  podIp: string,
  port: number,
  name = ADMISSION_NETWORK_POLICY,
): string | undefined {
  const family = isIP(podIp);
  if (family === 0) return undefined;
  const type = family === 6 ? "ipv6" : "ipv4";
  const fix =
    name === ADMISSION_NETWORK_POLICY
      ? `set its except to your cluster's pod CIDR (docs/security.md#admission-webhook)`
      : `keep the admission webhook's port out of its rules (docs/security.md#admission-webhook)`;
  if (policy === undefined)
    return `NetworkPolicy ${name} does not exist: every pod can reach the admission webhook's port ${port}; apply deploy/components/admission and ${fix}`;
  for (const rule of policy.spec?.ingress ?? []) {
    if (!opensAdmissionPort(rule, port)) continue;
    // A rule with no peers admits everyone.
    if (rule.from === undefined || rule.from.length === 0)
      return `NetworkPolicy ${name} opens the admission webhook's port ${port} to every source: every pod can reach it; ${fix}`;
    for (const peer of rule.from) {
      // A pod or namespace selector admits pods: those it selects reach the webhook.
      if (peer.podSelector !== undefined || peer.namespaceSelector !== undefined)
        return `NetworkPolicy ${name} opens the admission webhook's port ${port} to pods (a podSelector or namespaceSelector peer): those pods can reach it; ${fix}`;
      const block = peer.ipBlock;
      if (block?.cidr === undefined) continue;
      const inside = blockOf([block.cidr]);
      const except = blockOf(block.except ?? []);
      if (typeof inside === "string" || typeof except === "string") continue;
      if (!inside.check(podIp, type) || except.check(podIp, type)) continue;
      const excepted = (block.except ?? []).join(", ") || "nothing";
      return `this controller pod's address ${podIp} is not in the pod CIDR excepted by NetworkPolicy ${name} (${block.cidr} except ${excepted}): every pod on the pod network can reach the admission webhook's port ${port}; ${fix}`;
    }
  }
  return undefined;
}
