/** The API resources the controller reads and writes, and their URL paths. */

export interface Resource {
  group: string;
  version: string;
  plural: string;
}

export const AGENTS: Resource = { group: "agents.re-cinq.com", version: "v1beta1", plural: "agents" };
export const STATIONS: Resource = { group: "agents.re-cinq.com", version: "v1beta1", plural: "stations" };
export const AGENT_DEFINITIONS: Resource = {
  group: "agents.re-cinq.com",
  version: "v1beta1",
  plural: "agentdefinitions",
};
export const MODEL_USAGES: Resource = {
  group: "agents.re-cinq.com",
  version: "v1beta1",
  plural: "modelusages",
};
export const JOBS: Resource = { group: "batch", version: "v1", plural: "jobs" };
export const PODS: Resource = { group: "", version: "v1", plural: "pods" };
export const SECRETS: Resource = { group: "", version: "v1", plural: "secrets" };
export const LEASES: Resource = { group: "coordination.k8s.io", version: "v1", plural: "leases" };
export const NETWORK_POLICIES: Resource = {
  group: "networking.k8s.io",
  version: "v1",
  plural: "networkpolicies",
};

/** `/apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>[/<sub>]]` (core group under /api). */
export function resourcePath(r: Resource, namespace: string, name?: string, subresource?: string): string {
  const prefix = r.group === "" ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  let path = `${prefix}/namespaces/${encodeURIComponent(namespace)}/${r.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}
