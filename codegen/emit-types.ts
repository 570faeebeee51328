/** TypeScript types for one CRD, via json-schema-to-typescript. */
import { compile } from "json-schema-to-typescript";
import type { CrdSource } from "./crd-source.js";
import { formatScript } from "./format.js";
import { slashHeader } from "./header.js";
import { objectMetaSchema } from "./object-meta.js";
import { objectSchema } from "./object-schema.js";

const options = {
  bannerComment: "",
  format: false,
  additionalProperties: false,
  unknownAny: true,
  strictIndexSignatures: false,
  declareExternallyReferenced: true,
  enableConstEnums: false,
  ignoreMinAndMaxItems: true,
} as const;

type Schema = Parameters<typeof compile>[0];

export async function emitCrdTypes(crd: CrdSource, sourcePath: string): Promise<string> {
  const { schema } = objectSchema(crd, "types");
  const body = await compile(schema as Schema, crd.kind, { ...options, cwd: process.cwd() });
  const imports =
    'import type { ObjectMeta } from "./meta.js";\nexport type { ObjectMeta, OwnerReference } from "./meta.js";\n';
  return formatScript(`${slashHeader(sourcePath)}\n${imports}\n${body}`, `${crd.kind}.ts`);
}

/** The ObjectMeta every kind's `metadata` refers to. */
export async function emitMetaTypes(sourcePath: string): Promise<string> {
  const body = await compile(structuredClone(objectMetaSchema) as Schema, "ObjectMeta", {
    ...options,
    cwd: process.cwd(),
  });
  return formatScript(`${slashHeader(sourcePath)}\n${body}`, "meta.ts");
}

/** `generated/crds/index.ts`: every type and validator under one import. */
export function emitCrdIndex(baseNames: string[], sourcePaths: string[]): string {
  const lines = [
    ...baseNames.map((b) => `export type * from "./${b}.js";`),
    'export type * from "./meta.js";',
    'export { celRules, type CelRule } from "./cel-rules.js";',
    'export * from "./validators.js";',
  ];
  return formatScript(`${slashHeader(sourcePaths.join(", "))}\n${lines.join("\n")}\n`, "index.ts");
}
