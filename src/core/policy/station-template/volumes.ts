/**
 * The Station template's volume checks (docs/security.md#the-station-template-policy): every
 * volume has exactly one source, of an allowed kind; an ephemeral volume's claim starts empty.
 * Pure.
 */
import { secretProblem } from "./containers.js";
import { isObject } from "./normalize.js";
import { type Check, objectList, RUN_VOLUME_NAMES, T } from "./types.js";

/** Volume kinds that carry no credential and reach nothing outside the pod: allowed by default. */
export const DEFAULT_VOLUME_KINDS: readonly string[] = ["emptyDir", "configMap", "downwardAPI", "ephemeral"];

/** Volume kinds no installation setting allows: they reach the node itself (gitRepo runs git on the node, as root). */
export const NEVER_VOLUME_KINDS: ReadonlySet<string> = new Set(["hostPath", "gitRepo"]);

/**
 * What an ephemeral volume's claim template may say by default: a new, empty volume of a size,
 * class and mode. `dataSource`, `dataSourceRef` (a clone of any PVC or snapshot of the namespace),
 * `volumeName` (a named PersistentVolume) and `selector` (binding an existing one by its labels)
 * are refused unless the installation allows ephemeral volumes outright (RUN_POD_VOLUME_KINDS).
 */
const CLAIM_SPEC_FIELDS = new Set([
  "accessModes",
  "resources",
  "storageClassName",
  "volumeMode",
  "volumeAttributesClassName",
]);

export const volumes: Check = ({ spec, policy }) => {
  const list = objectList(spec.volumes, `${T}.volumes`);
  if ("problem" in list) return list.problem;
  for (const [i, v] of list.items.entries()) {
    const name = String(v.name ?? "");
    if (RUN_VOLUME_NAMES.has(name)) continue; // replaced by the controller's own
    const at = `${T}.volumes[${i}] (${name})`;
    // After normalisation (nulls dropped) every key but the name is a source; none is emptyDir,
    // as the API server defaults it.
    const sources = Object.keys(v).filter((k) => k !== "name");
    const never = sources.find((k) => NEVER_VOLUME_KINDS.has(k));
    if (never) return `${never} volume ${name} is not allowed`;
    if (sources.length > 1) {
      return `${at}: a volume has exactly one source, this one has ${sources.length} (${sources.join(", ")})`;
    }
    const kind = sources[0] ?? "emptyDir";
    const widened = policy.volumeKinds.includes(kind);
    if (!DEFAULT_VOLUME_KINDS.includes(kind) && !widened) {
      return `${at}: ${kind} volumes are not allowed: they can carry credentials or reach outside the pod; the installation allows more kinds with RUN_POD_VOLUME_KINDS`;
    }
    if (kind === "ephemeral" && !widened) {
      const problem = ephemeralClaim(v.ephemeral, at);
      if (problem) return problem;
    }
    // Allowing the kind does not allow every Secret: the same Secrets as a container's env.
    const problem = volumeSecrets(kind, v, at, policy.secrets ?? []);
    if (problem) return problem;
  }
  return undefined;
};

function ephemeralClaim(ephemeral: unknown, at: string): string | undefined {
  const template = isObject(ephemeral) ? ephemeral.volumeClaimTemplate : undefined;
  const spec = isObject(template) ? template.spec : undefined;
  if (!isObject(spec)) return undefined; // the API server refuses an ephemeral volume without a claim spec
  for (const field of Object.keys(spec)) {
    if (!CLAIM_SPEC_FIELDS.has(field)) {
      return `${at}: ephemeral.volumeClaimTemplate.spec.${field} is not allowed: a run's ephemeral volume starts empty (no clone or binding of an existing volume); the installation allows any claim template with RUN_POD_VOLUME_KINDS=ephemeral`;
    }
  }
  return undefined;
}

/** The Secrets a secret or projected volume names, each judged like an env reference. */
function volumeSecrets(
  kind: string,
  v: Record<string, unknown>,
  at: string,
  secrets: readonly string[],
): string | undefined {
  const source = v[kind];
  if (!isObject(source)) return undefined;
  if (kind === "secret") return secretProblem(source.secretName, `${at}.secret.secretName`, secrets);
  if (kind !== "projected" || !Array.isArray(source.sources)) return undefined;
  for (const [j, s] of source.sources.entries()) {
    const secret = isObject(s) ? s.secret : undefined;
    if (!isObject(secret)) continue;
    const problem = secretProblem(secret.name, `${at}.projected.sources[${j}].secret.name`, secrets);
    if (problem) return problem;
  }
  return undefined;
}
