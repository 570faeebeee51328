/**
 * A container's environment as the kubelet builds it from the pod spec: `envFrom`, then `env`
 * (`value` with `$(VAR)` expansion, `secretKeyRef`, `configMapKeyRef`, `fieldRef`). Nothing comes
 * from the runner's own environment. Errors carry the kubelet's messages; the runner reports them
 * as `CreateContainerConfigError` and retries.
 */
import type { ContainerSpec, PodJson } from "./types.js";

/** Reads Secrets and ConfigMaps of the pod's namespace; undefined when the object does not exist. */
export interface EnvSources {
  secret(name: string): Promise<Record<string, string> | undefined>;
  configMap(name: string): Promise<Record<string, string> | undefined>;
}

/** A container whose environment cannot be built yet (kubelet: CreateContainerConfigError). */
export class ContainerConfigError extends Error {}

/**
 * Kubernetes' `$(VAR)` expansion: `$(NAME)` becomes the value when NAME is defined, else stays as
 * written; `$$` is an escaped `$`. Used for env values, command and args.
 */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== "$" || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === "$") {
      out += "$";
      i++;
    } else if (next === "(") {
      const close = input.indexOf(")", i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}

const SUBSCRIPT = /^metadata\.(labels|annotations)\['(.+)'\]$/;

/** The value of a downward-API `fieldRef`, or a ContainerConfigError naming an unsupported path. */
export function fieldRefValue(pod: PodJson, fieldPath: string, podIP: string, hostIP: string): string {
  const sub = SUBSCRIPT.exec(fieldPath);
  if (sub) {
    const map = sub[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[sub[2] ?? ""] ?? "";
  }
  switch (fieldPath) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "metadata.uid":
      return pod.metadata.uid;
    case "spec.nodeName":
      return pod.spec.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "";
    case "status.podIP":
    case "status.podIPs":
      return podIP;
    case "status.hostIP":
    case "status.hostIPs":
      return hostIP;
    default:
      throw new ContainerConfigError(`unsupported fieldPath: ${fieldPath}`);
  }
}

async function keyOf(
  kind: "Secret" | "ConfigMap",
  ref: { name?: string; key: string; optional?: boolean },
  namespace: string,
  read: (name: string) => Promise<Record<string, string> | undefined>,
): Promise<string | undefined> {
  const name = ref.name ?? "";
  const data = await read(name);
  if (data === undefined) {
    if (ref.optional) return undefined;
    throw new ContainerConfigError(`${kind.toLowerCase()} "${name}" not found`);
  }
  const value = data[ref.key];
  if (value === undefined) {
    if (ref.optional) return undefined;
    throw new ContainerConfigError(`couldn't find key ${ref.key} in ${kind} ${namespace}/${name}`);
  }
  return value;
}

/** Builds `container`'s environment; throws ContainerConfigError with the kubelet's message. */
export async function resolveEnv(
  pod: PodJson,
  container: ContainerSpec,
  addresses: { podIP: string; hostIP: string },
  sources: EnvSources,
): Promise<Record<string, string>> {
  const ns = pod.metadata.namespace;
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef;
    const kind = from.secretRef ? "Secret" : "ConfigMap";
    if (!ref) continue;
    const name = ref.name ?? "";
    const data = await (kind === "Secret" ? sources.secret(name) : sources.configMap(name));
    if (data === undefined) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${kind.toLowerCase()} "${name}" not found`);
    }
    for (const [key, value] of Object.entries(data)) env[`${from.prefix ?? ""}${key}`] = value;
  }
  for (const entry of container.env ?? []) {
    const from = entry.valueFrom;
    let value: string | undefined;
    if (!from) {
      value = expandVars(entry.value ?? "", (n) => env[n]);
    } else if (from.secretKeyRef) {
      value = await keyOf("Secret", from.secretKeyRef, ns, (n) => sources.secret(n));
    } else if (from.configMapKeyRef) {
      value = await keyOf("ConfigMap", from.configMapKeyRef, ns, (n) => sources.configMap(n));
    } else if (from.fieldRef) {
      value = fieldRefValue(pod, from.fieldRef.fieldPath, addresses.podIP, addresses.hostIP);
    } else {
      throw new ContainerConfigError(`env ${entry.name}: the pod runner does not support this valueFrom`);
    }
    if (value !== undefined) env[entry.name] = value;
  }
  return env;
}
