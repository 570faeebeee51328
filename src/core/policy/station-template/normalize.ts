/**
 * The one copy of a Station's pod template that is both checked and built from
 * (docs/security.md#the-station-template-policy). The template is stored with
 * x-kubernetes-preserve-unknown-fields, so a `null` survives in it, and the API server reads a
 * null field of the Job's pod as absent: `{name: h, emptyDir: null, hostPath: {path: /}}` is a
 * hostPath volume to the kubelet. Checking the raw object and building from it would let the two
 * readings differ; dropping every null first makes them one. Pure.
 */

/** A deep copy of `value` without null or undefined object fields (list items are kept as they are). */
export function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value !== null && typeof value === "object") {
    // fromEntries defines own properties, so a "__proto__" key stays a plain field.
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => [k, withoutNulls(v)]),
    );
  }
  return value;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);
