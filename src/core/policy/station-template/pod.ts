/**
 * The Station template's pod-level checks (docs/security.md#the-station-template-policy): only
 * allowlisted pod-spec fields; tolerations that name a taint of the installation's own; DNS the
 * cluster's; no AppArmor or seccomp loosened through the template's annotations. Pure.
 */
import { POD_FIELDS_CHECKED, POD_FIELDS_FREE, POD_FIELDS_REPLACED } from "./fields.js";
import { type Check, notAllowed, objectList, T, widened } from "./types.js";

export const podFields: Check = ({ spec, policy }) => {
  for (const field of Object.keys(spec)) {
    if (POD_FIELDS_FREE.has(field) || POD_FIELDS_REPLACED.has(field) || POD_FIELDS_CHECKED.has(field))
      continue;
    if (!widened(policy, field)) return notAllowed(`${T}.${field}`, field);
  }
  return undefined;
};

/** A taint key Kubernetes itself sets (a node's condition, the control plane's role, the cloud provider's). */
const kubernetesTaint = (key: string) => /^([^/]*\.)?(kubernetes\.io|k8s\.io)\//.test(key);

/**
 * A toleration must name its taint: one without a key (`operator: Exists`) tolerates every taint
 * of every node, the control plane's and a failing node's included; a Kubernetes taint is refused
 * too. Dedicated pools (`key: dedicated`, Equal or Exists) stay allowed.
 */
export const tolerations: Check = ({ spec, policy }) => {
  if (widened(policy, "tolerations")) return undefined;
  const list = objectList(spec.tolerations, `${T}.tolerations`);
  if ("problem" in list) return list.problem;
  const hint = "an installation allows any toleration with RUN_POD_FIELDS=tolerations";
  for (const [i, t] of list.items.entries()) {
    const key = t.key;
    if (typeof key !== "string" || key === "") {
      return `${T}.tolerations[${i}] is not allowed: a toleration without a key tolerates every taint of every node; name the taint's key, or ${hint}`;
    }
    if (kubernetesTaint(key)) {
      return `${T}.tolerations[${i}].key ${JSON.stringify(key)} is not allowed: it is a taint Kubernetes sets (the control plane, a node's condition); ${hint}`;
    }
  }
  return undefined;
};

/** ClusterFirst (the default) or Default (the node's resolver); None with a dnsConfig could send the courier's forge calls anywhere. */
export const dnsPolicy: Check = ({ spec, policy }) => {
  const value: unknown = spec.dnsPolicy;
  if (
    value === undefined ||
    value === "ClusterFirst" ||
    value === "Default" ||
    widened(policy, "dnsPolicy")
  ) {
    return undefined;
  }
  return `${T}.dnsPolicy ${JSON.stringify(value)} is not allowed: only ClusterFirst or Default; an installation allows others with RUN_POD_FIELDS=dnsPolicy`;
};

/** The annotation forms of AppArmor and seccomp, which a kubelet still honours for a pod without the fields. */
const APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_ANNOTATIONS = [
  "seccomp.security.alpha.kubernetes.io/pod",
  "container.seccomp.security.alpha.kubernetes.io/",
];

export const confinementAnnotations: Check = ({ annotations, policy }) => {
  for (const [key, value] of Object.entries(annotations)) {
    const at = `spec.template.metadata.annotations[${JSON.stringify(key)}]`;
    if (
      key.startsWith(APPARMOR_ANNOTATION) &&
      value !== "runtime/default" &&
      !widened(policy, "appArmorProfile")
    ) {
      return `${at} ${JSON.stringify(value)} is not allowed: only runtime/default; an installation allows others with RUN_POD_FIELDS=appArmorProfile`;
    }
    if (
      SECCOMP_ANNOTATIONS.some((s) => key === s || (s.endsWith("/") && key.startsWith(s))) &&
      value !== "runtime/default"
    ) {
      return `${at} ${JSON.stringify(value)} is not allowed: the controller gives every container the RuntimeDefault seccomp profile`;
    }
  }
  return undefined;
};
