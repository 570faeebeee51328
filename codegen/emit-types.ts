/** TypeScript types for one CRD, via json-schema-to-typescript. */
import { compile } from "json-schema-to-typescript";
import type { CrdSource } from "./crd-source.js";
import { formatScript } from "./format.js";
import { slashHeader } from "./header.js";
import { objectSchema } from "./object-schema.js";

export async function emitCrdTypes(crd: CrdSource, sourcePath: string): Promise<string> {
  const { schema } = objectSchema(crd, "types");
  const body = await compile(schema as Parameters<typeof compile>[0], crd.kind, {
    bannerComment: "",
    format: false,
    additionalProperties: false,
    unknownAny: true,
    strictIndexSignatures: false,
    declareExternallyReferenced: true,
    enableConstEnums: false,
    ignoreMinAndMaxItems: true,
    cwd: process.cwd(),
  });
  return formatScript(`${slashHeader(sourcePath)}\n${body}`, `${crd.kind}.ts`);
}
