/** Reading the CRD manifests in schemas/crds/ and picking out what codegen needs. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parse } from "yaml";

export type JsonSchema = { [key: string]: unknown };

export interface CrdSource {
  /** File name inside the CRD directory, e.g. `agent.yaml`. */
  fileName: string;
  /** The parsed manifest. */
  manifest: JsonSchema;
  group: string;
  kind: string;
  version: string;
  /** openAPIV3Schema of the storage version. */
  schema: JsonSchema;
}

function asRecord(value: unknown, where: string): JsonSchema {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${where} must be an object`);
  }
  return value as JsonSchema;
}

export function parseCrd(fileName: string, text: string): CrdSource {
  const manifest = asRecord(parse(text), fileName);
  if (manifest.kind !== "CustomResourceDefinition") {
    throw new Error(`${fileName}: kind must be CustomResourceDefinition, got ${String(manifest.kind)}`);
  }
  const spec = asRecord(manifest.spec, `${fileName}: spec`);
  const names = asRecord(spec.names, `${fileName}: spec.names`);
  const versions = spec.versions;
  if (!Array.isArray(versions) || versions.length === 0) {
    throw new Error(`${fileName}: spec.versions must be a non-empty list`);
  }
  const storage = versions
    .map((v, i) => asRecord(v, `${fileName}: spec.versions[${i}]`))
    .find((v) => v.storage);
  if (!storage) throw new Error(`${fileName}: no version has storage: true`);
  const schemaHolder = asRecord(storage.schema, `${fileName}: storage version schema`);
  return {
    fileName,
    manifest,
    group: String(spec.group),
    kind: String(names.kind),
    version: String(storage.name),
    schema: asRecord(schemaHolder.openAPIV3Schema, `${fileName}: openAPIV3Schema`),
  };
}

/** Every `*.yaml` in `dir`, sorted by file name so the output order never depends on the file system. */
export async function readCrds(dir: string): Promise<CrdSource[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith(".yaml")).sort();
  return Promise.all(names.map(async (n) => parseCrd(n, await readFile(path.join(dir, n), "utf8"))));
}

/** `agent.yaml` -> `agent`: the base name shared by every file derived from one CRD. */
export function baseName(fileName: string): string {
  return fileName.replace(/\.ya?ml$/, "");
}
