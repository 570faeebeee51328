/**
 * Turns a CRD's openAPIV3Schema into a JSON Schema of the whole object (apiVersion, kind,
 * metadata, spec, status) for json-schema-to-typescript and ajv.
 *
 * Kubernetes-only keywords are translated: preserve-unknown-fields becomes
 * `additionalProperties: true`; any other object with declared properties becomes closed
 * (`additionalProperties: false`), which mirrors kubectl's strict field validation and keeps
 * the TypeScript types free of index signatures. CEL rules become their equivalents from
 * cel-equivalents.ts in `validation` mode only.
 */
import { celEquivalents } from "./cel-equivalents.js";
import type { CrdSource, JsonSchema } from "./crd-source.js";
import { objectMetaSchema } from "./object-meta.js";

export interface CelRuleRecord {
  kind: string;
  /** Dotted location of the object the rule applies to, with `[]` for list items. */
  location: string;
  rule: string;
  message: string;
  enforcedBy: "schema-and-api-server" | "api-server-only";
  /** ajv schemaPath of the equivalent (`#/…/allOf/n`), when there is one. */
  schemaPath?: string;
  why?: string;
}

export type SchemaMode = "types" | "validation";

interface Walk {
  kind: string;
  mode: SchemaMode;
  rules: CelRuleRecord[];
}

function isRecord(value: unknown): value is JsonSchema {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function translate(node: JsonSchema, pointer: string, location: string, walk: Walk): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key.startsWith("x-kubernetes-")) continue;
    // Validators only need the constraints; prose would bloat the generated module.
    if (walk.mode === "validation" && (key === "description" || key === "title")) continue;
    if (key === "properties" && isRecord(value)) {
      const props: JsonSchema = {};
      for (const [name, child] of Object.entries(value)) {
        if (!isRecord(child)) throw new Error(`${walk.kind}: ${location}.${name} is not a schema`);
        const childLocation = location ? `${location}.${name}` : name;
        props[name] = translate(child, `${pointer}/properties/${name}`, childLocation, walk);
      }
      out.properties = props;
    } else if (key === "items" && isRecord(value)) {
      out.items = translate(value, `${pointer}/items`, `${location}[]`, walk);
    } else if (key === "additionalProperties" && isRecord(value)) {
      out.additionalProperties = translate(value, `${pointer}/additionalProperties`, `${location}.*`, walk);
    } else {
      out[key] = structuredClone(value);
    }
  }
  if (node["x-kubernetes-preserve-unknown-fields"] === true) {
    out.additionalProperties = true;
  } else if (node.type === "object" && isRecord(node.properties) && node.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  const validations = node["x-kubernetes-validations"];
  if (Array.isArray(validations)) {
    const allOf: JsonSchema[] = [];
    for (const entry of validations) {
      if (!isRecord(entry) || typeof entry.rule !== "string") {
        throw new Error(`${walk.kind}: ${location}: x-kubernetes-validations entries need a rule`);
      }
      const equivalent = celEquivalents[entry.rule];
      if (!equivalent) {
        throw new Error(
          `${walk.kind}: ${location}: CEL rule ${JSON.stringify(entry.rule)} has no entry in codegen/cel-equivalents.ts; add its JSON Schema equivalent or mark it api-server-only`,
        );
      }
      const message = typeof entry.message === "string" ? entry.message : `failed rule: ${entry.rule}`;
      const record: CelRuleRecord = {
        kind: walk.kind,
        location,
        rule: entry.rule,
        message,
        enforcedBy: equivalent.enforcedBy,
      };
      if (equivalent.enforcedBy === "schema-and-api-server") {
        record.schemaPath = `#${pointer}/allOf/${allOf.length}`;
        allOf.push(structuredClone(equivalent.schema));
      } else {
        record.why = equivalent.why;
      }
      walk.rules.push(record);
    }
    if (walk.mode === "validation" && allOf.length > 0) out.allOf = allOf;
  }
  return out;
}

export interface ObjectSchema {
  schema: JsonSchema;
  rules: CelRuleRecord[];
}

export function objectSchema(crd: CrdSource, mode: SchemaMode): ObjectSchema {
  const walk: Walk = { kind: crd.kind, mode, rules: [] };
  const schema = translate(crd.schema, "", "", walk);
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const apiVersion = `${crd.group}/${crd.version}`;
  schema.properties = {
    ...properties,
    apiVersion: { ...(properties.apiVersion as JsonSchema), const: apiVersion },
    kind: { ...(properties.kind as JsonSchema), const: crd.kind },
    // Types: one shared ObjectMeta in meta.ts, referenced by name, so the kinds can be
    // re-exported together without clashing declarations.
    metadata:
      mode === "validation"
        ? { type: "object", additionalProperties: true }
        : { tsType: "ObjectMeta", description: objectMetaSchema.description },
  };
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  schema.required = [...new Set(["apiVersion", "kind", "metadata", ...required])];
  if (mode === "validation") schema.$id = crd.kind;
  return { schema, rules: walk.rules };
}
