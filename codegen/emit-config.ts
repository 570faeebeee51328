/**
 * The controller's configuration documents (schemas/config/*.yaml, plain JSON Schema): for each,
 * its TypeScript types (json-schema-to-typescript) and an ahead-of-time compiled ajv validator
 * reporting every error, so nothing compiles a schema at runtime.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import Ajv from "ajv";
import standaloneCode from "ajv/dist/standalone/index.js";
import { compile } from "json-schema-to-typescript";
import { parse } from "yaml";
import { requiresToImports } from "./emit-validators.js";
import { formatScript } from "./format.js";
import { slashHeader } from "./header.js";

export async function listConfigSchemas(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => n.endsWith(".yaml")).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

export interface EmittedConfig {
  types: string;
  js: string;
  dts: string;
}

/** `validatePriceOverrides` for a schema titled PriceOverrides. */
export async function emitConfig(file: string, sourcePath: string): Promise<EmittedConfig> {
  const schema = parse(await readFile(file, "utf8")) as { title?: string } & Record<string, unknown>;
  const title = schema.title;
  if (typeof title !== "string" || !/^[A-Z]\w+$/.test(title)) {
    throw new Error(`${sourcePath}: a config schema needs a PascalCase title (its type's name)`);
  }
  const base = path.basename(file, ".yaml");
  const header = slashHeader(sourcePath);
  const body = await compile(structuredClone(schema) as Parameters<typeof compile>[0], title, {
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
  const types = formatScript(`${header}\n${body}`, `${base}.ts`);

  // String lengths as UTF-16 units (unicode: false) avoid ajv's ucs2length helper, a CommonJS
  // default export; a bound that is a few units off either way changes nothing for these fields.
  const ajv = new Ajv.default({
    code: { source: true, esm: true, lines: true },
    allErrors: true,
    strict: true,
    unicode: false,
    logger: { log: () => {}, warn: () => {}, error: (...args: unknown[]) => console.error(...args) },
  });
  const { $schema: _ignored, ...compiled } = schema;
  ajv.addSchema({ ...compiled, $id: title });
  const name = `validate${title}`;
  const js = formatScript(
    `${header}\n${requiresToImports(standaloneCode.default(ajv, { [name]: title }))}`,
    `${base}-validator.js`,
  );
  const dts = formatScript(
    `${header}\nimport type { ErrorObject } from "ajv";\n\n/** Ahead-of-time compiled validator for ${title}. */\nexport declare const ${name}: {\n  (data: unknown): boolean;\n  errors?: ErrorObject[] | null;\n};\n`,
    `${base}-validator.d.ts`,
  );
  return { types, js, dts };
}
