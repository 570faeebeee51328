/**
 * The Station template allowlist (docs/security.md#the-station-template-policy): the pod-spec,
 * container and security-context fields a Station may set. A field on no list is refused naming
 * it; the installation allows one deliberately with RUN_POD_FIELDS, except the NEVER ones, which
 * reach the node's namespaces or the other containers' processes. Pure data.
 */

/** Pod-spec fields a Station sets freely: scheduling and timing, nothing that reaches a credential. */
export const POD_FIELDS_FREE: ReadonlySet<string> = new Set([
  "affinity",
  "nodeSelector",
  "topologySpreadConstraints",
  "activeDeadlineSeconds",
  "terminationGracePeriodSeconds",
  "enableServiceLinks",
  "hostname",
  "subdomain",
]);

/** Pod-spec fields the controller replaces with its own value whatever the Station says. */
export const POD_FIELDS_REPLACED: ReadonlySet<string> = new Set([
  "securityContext",
  "automountServiceAccountToken",
  "restartPolicy",
]);

/** Pod-spec fields allowed with a value check of their own (../station-policy.ts). */
export const POD_FIELDS_CHECKED: ReadonlySet<string> = new Set([
  "containers",
  "initContainers",
  "volumes",
  "serviceAccountName",
  "serviceAccount",
  "hostNetwork",
  "hostPID",
  "hostIPC",
  "shareProcessNamespace",
  "tolerations",
  "dnsPolicy",
]);

/** Fields no installation setting allows: the node's namespaces, the other containers' processes. */
export const NEVER_FIELDS: ReadonlySet<string> = new Set([
  "hostNetwork",
  "hostPID",
  "hostIPC",
  "shareProcessNamespace",
]);

/** Container fields a Station container (the agent's included) may set; env, mounts, ports and securityContext are checked further. */
export const CONTAINER_FIELDS: ReadonlySet<string> = new Set([
  "name",
  "image",
  "imagePullPolicy",
  "command",
  "args",
  "workingDir",
  "env",
  "envFrom",
  "resources",
  "resizePolicy",
  "volumeMounts",
  "volumeDevices",
  "ports",
  "livenessProbe",
  "readinessProbe",
  "startupProbe",
  "lifecycle",
  "securityContext",
  "terminationMessagePath",
  "terminationMessagePolicy",
  "stdin",
  "stdinOnce",
  "tty",
  "restartPolicy",
]);

/**
 * A container's securityContext fields a Station may set. The controller replaces the user,
 * escalation, capabilities and seccomp of every container (../../run-job/job.ts); the root, privilege,
 * capability and /proc values are refused by the policy; appArmorProfile only as RuntimeDefault.
 */
export const SECURITY_CONTEXT_FIELDS: ReadonlySet<string> = new Set([
  "runAsUser",
  "runAsGroup",
  "runAsNonRoot",
  "readOnlyRootFilesystem",
  "allowPrivilegeEscalation",
  "privileged",
  "capabilities",
  "procMount",
  "seccompProfile",
  "appArmorProfile",
]);

/** Names RUN_POD_FIELDS accepts: every field the policy refuses by name, except the NEVER ones. */
export const WIDENABLE_FIELDS: ReadonlySet<string> = new Set([
  // pod spec
  "nodeName",
  "tolerations",
  "priorityClassName",
  "preemptionPolicy",
  "runtimeClassName",
  "schedulerName",
  "hostAliases",
  "dnsPolicy",
  "dnsConfig",
  "imagePullSecrets",
  "hostUsers",
  "os",
  "overhead",
  "readinessGates",
  "resourceClaims",
  "resources",
  "schedulingGates",
  "setHostnameAsFQDN",
  // container ports and security context
  "hostPort",
  "hostIP",
  "appArmorProfile",
  "seLinuxOptions",
  "windowsOptions",
]);
