/**
 * docs/reference/crds.md: the CRD reference page, built from the descriptions in schemas/crds/
 * (the same text `kubectl explain` shows). Every field must have a description; codegen stops,
 * naming each field without one, rather than publish a page (and an explain) with holes.
 */
import type { CrdSource, JsonSchema } from "./crd-source.js";
import { normaliseText } from "./header.js";

export const REFERENCE_PATH = "docs/reference/crds.md";

export interface FieldRow {
  /** Dotted path as users write it, list elements as `[]`: `spec.files[].url`. */
  path: string;
  type: string;
  required: boolean;
  description: string;
  constraints: string[];
}

const asSchema = (v: unknown): JsonSchema | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as JsonSchema) : undefined;

function typeOf(s: JsonSchema): string {
  if (s["x-kubernetes-int-or-string"]) return "integer or string";
  const items = asSchema(s.items);
  if (s.type === "array" && items) return `[]${typeOf(items)}`;
  const values = asSchema(s.additionalProperties);
  if (s.type === "object" && values && !s.properties) return `map[string]${typeOf(values)}`;
  if (s["x-kubernetes-preserve-unknown-fields"] && !s.properties) return "object (any fields)";
  const format = typeof s.format === "string" ? ` (${s.format})` : "";
  return `${String(s.type ?? "any")}${format}`;
}

const code = (v: unknown) => `\`${typeof v === "string" ? v : JSON.stringify(v)}\``;

function constraintsOf(s: JsonSchema): string[] {
  const out: string[] = [];
  if (Array.isArray(s.enum)) out.push(`one of ${s.enum.map(code).join(", ")}`);
  if (s.default !== undefined) out.push(`default ${code(s.default)}`);
  if (s.minimum !== undefined) out.push(`minimum ${s.minimum}`);
  if (s.maximum !== undefined) out.push(`maximum ${s.maximum}`);
  if (s.minLength !== undefined) out.push(`min length ${s.minLength}`);
  if (s.maxLength !== undefined) out.push(`max length ${s.maxLength}`);
  if (s.minItems !== undefined) out.push(`min items ${s.minItems}`);
  if (s.maxItems !== undefined) out.push(`max items ${s.maxItems}`);
  if (typeof s.pattern === "string") out.push(`pattern ${code(s.pattern)}`);
  if (s["x-kubernetes-list-type"] === "map" && Array.isArray(s["x-kubernetes-list-map-keys"])) {
    out.push(`list keyed by ${s["x-kubernetes-list-map-keys"].map(code).join(", ")}`);
  }
  const rules = Array.isArray(s["x-kubernetes-validations"]) ? s["x-kubernetes-validations"] : [];
  for (const r of rules) {
    const rule = asSchema(r);
    if (rule) out.push(`rule: ${String(rule.message ?? rule.rule)}`);
  }
  return out;
}

/**
 * The root metadata's text. The API server forbids a description there (a CRD may only
 * restrict metadata.name and generateName); kubectl explain shows ObjectMeta's own.
 */
const OBJECT_META =
  "Standard object metadata (Kubernetes ObjectMeta): name, namespace, labels, annotations, finalizers, owner references.";

/**
 * Every field of a schema, depth first in declaration order. Fields of list elements follow
 * their list (`spec.files[].path`); a list of scalars and a map's values add no row of their
 * own, since `kubectl explain` shows nothing for them either.
 */
export function fieldRows(root: JsonSchema): FieldRow[] {
  const rows: FieldRow[] = [];
  const walk = (s: JsonSchema, prefix: string) => {
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    for (const [name, value] of Object.entries(asSchema(s.properties) ?? {})) {
      const child = asSchema(value) ?? {};
      const path = prefix ? `${prefix}.${name}` : name;
      const own = typeof child.description === "string" ? child.description.replace(/\s+/g, " ").trim() : "";
      rows.push({
        path,
        type: typeOf(child),
        required: required.has(name),
        description: path === "metadata" && own === "" ? OBJECT_META : own,
        constraints: constraintsOf(child),
      });
      walk(child, path);
      const items = asSchema(child.items);
      if (items) walk(items, `${path}[]`);
    }
  };
  walk(root, "");
  return rows;
}

/** Paths of fields without a description, as `<file>: <path>`. */
export function undescribedFields(crds: readonly CrdSource[]): string[] {
  return crds.flatMap((crd) =>
    fieldRows(crd.schema)
      .filter((r) => r.description === "")
      .map((r) => `${crd.fileName}: ${r.path}`),
  );
}

const cell = (text: string) => text.replace(/\|/g, "\\|");
/**
 * Prose from a description: outside its `code spans`, no HTML tags (`<name>`) and no stray
 * emphasis (`gemini-*`).
 */
const prose = (text: string) =>
  cell(
    text
      .split(/(`[^`]*`)/)
      .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, "&lt;").replace(/\*/g, "\\*")))
      .join(""),
  );

function crdSection(crd: CrdSource): string {
  const names = asSchema(asSchema(crd.manifest.spec)?.names) ?? {};
  const shortNames = Array.isArray(names.shortNames) ? (names.shortNames as string[]) : [];
  const rows = fieldRows(crd.schema).map((r) => {
    const type = `${r.type}${r.required ? ", required" : ""}`;
    const more = r.constraints.length > 0 ? ` Constraints: ${r.constraints.join("; ")}.` : "";
    return `| \`${r.path}\` | ${cell(type)} | ${prose(r.description)}${cell(more)} |`;
  });
  const description =
    typeof crd.schema.description === "string" ? crd.schema.description.replace(/\s+/g, " ") : "";
  return [
    `## ${crd.kind}`,
    "",
    prose(description),
    "",
    `\`${crd.group}/${crd.version}\`, plural \`${String(names.plural)}\`${
      shortNames.length > 0 ? `, short names ${shortNames.map((n) => `\`${n}\``).join(", ")}` : ""
    }. Source: \`schemas/crds/${crd.fileName}\`.`,
    "",
    "| Field | Type | Description |",
    "| --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

export function emitReference(crds: readonly CrdSource[], sources: readonly string[]): string {
  const holes = undescribedFields(crds);
  if (holes.length > 0) {
    throw new Error(
      `every CRD field needs a description (the reference page and kubectl explain show it); missing:\n  ${holes.join("\n  ")}`,
    );
  }
  const sorted = [...crds].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  return normaliseText(
    [
      `<!-- Code generated by \`npm run codegen\` from ${sources.join(", ")}. DO NOT EDIT. -->`,
      "",
      "# CRD reference",
      "",
      "Every field of the three custom resources, with the description `kubectl explain` shows",
      "(e.g. `kubectl explain agent.spec.files`). Generated from `schemas/crds/`; edit the",
      "descriptions there and run `npm run codegen`. List elements are written `[]`.",
      "",
      ...sorted.map((c) => `- [${c.kind}](#${c.kind.toLowerCase()})`),
      "",
      ...sorted.map(crdSection),
    ].join("\n"),
  );
}
