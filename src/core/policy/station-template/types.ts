/** What the Station template checks share (docs/security.md#the-station-template-policy). */
import type { V1Container, V1PodSpec } from "@kubernetes/client-node";
import { WIDENABLE_FIELDS } from "./fields.js";

export interface StationPolicy {
  /** ServiceAccounts a Station may name beside the namespace's `default` (RUN_POD_SERVICE_ACCOUNTS). */
  serviceAccounts: readonly string[];
  /** Volume kinds a Station may add beside DEFAULT_VOLUME_KINDS (RUN_POD_VOLUME_KINDS). */
  volumeKinds: readonly string[];
  /** Secrets a Station container's env may read beside agent-secrets (RUN_POD_SECRETS). */
  secrets?: readonly string[];
  /** Fields outside the allowlist the installation allows (RUN_POD_FIELDS; fields.ts WIDENABLE_FIELDS). */
  fields?: readonly string[];
}

export interface PlacedContainer {
  c: V1Container;
  /** Its field path, e.g. `spec.template.spec.containers[1]`. */
  path: string;
}

/** The normalised template (nulls dropped), gathered once for every check. */
export interface Gathered {
  spec: V1PodSpec;
  /** The template's own metadata annotations. */
  annotations: Record<string, unknown>;
  /** Every container the Station adds beside `agent`, init containers included, with its field path. */
  added: PlacedContainer[];
  agent: PlacedContainer | undefined;
  policy: StationPolicy;
}

export type Check = (g: Gathered) => string | undefined;

export const T = "spec.template.spec";

/** The volumes the controller owns (the agent's home, the workspace, the witness's result). */
export const RUN_VOLUME_NAMES: ReadonlySet<string> = new Set(["agent", "workspace", "agent-result"]);

/** Whether the installation allows `field` outside the allowlist (RUN_POD_FIELDS). */
export const widened = (policy: StationPolicy, field: string): boolean =>
  (policy.fields ?? []).includes(field);

/** The refusal of a field outside the allowlist, saying how an installation allows it when it can. */
export const notAllowed = (path: string, field: string): string =>
  WIDENABLE_FIELDS.has(field)
    ? `${path} is not allowed: it is outside the Station template allowlist (docs/security.md#the-station-template-policy); an installation allows it with RUN_POD_FIELDS=${field}`
    : `${path} is not allowed: it is not a field the Station template allowlist knows (docs/security.md#the-station-template-policy)`;

/** `value` as a list of objects, or why not (naming `path`). */
export function objectList(
  value: unknown,
  path: string,
): { items: Record<string, unknown>[] } | { problem: string } {
  if (value === undefined) return { items: [] };
  if (!Array.isArray(value)) return { problem: `${path} must be a list` };
  const bad = value.findIndex((v) => v === null || typeof v !== "object" || Array.isArray(v));
  if (bad >= 0) return { problem: `${path}[${bad}] must be an object` };
  return { items: value as Record<string, unknown>[] };
}
