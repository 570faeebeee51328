/**
 * ajv standalone validators for every CRD, compiled at codegen time so nothing compiles a
 * schema at runtime. Output is one ESM module plus its declaration file.
 */
import Ajv from "ajv";
import standaloneCode from "ajv/dist/standalone/index.js";
import addFormats from "ajv-formats";
import type { CrdSource } from "./crd-source.js";
import { formatScript } from "./format.js";
import { slashHeader } from "./header.js";
import { type CelRuleRecord, objectSchema } from "./object-schema.js";

export interface EmittedValidators {
  js: string;
  dts: string;
  rules: CelRuleRecord[];
}

export function validatorName(kind: string): string {
  return `validate${kind}`;
}

/**
 * ajv's standalone output still uses `require()` for format functions even in ESM mode; hoist
 * each into a namespace import. Only named exports are allowed: a CommonJS `default` is read
 * differently by Node and by bundlers, so it fails codegen instead of failing at runtime.
 */
export function requiresToImports(code: string): string {
  const modules: string[] = [];
  const body = code.replace(
    /require\("([^"]+)"\)(\.[A-Za-z_$][\w$]*)?/g,
    (_match, spec: string, member?: string) => {
      if (!member || member === ".default") {
        throw new Error(`ajv standalone code needs ${spec}${member ?? ""}, which has no portable ESM import`);
      }
      let index = modules.indexOf(spec);
      if (index === -1) index = modules.push(spec) - 1;
      return `__cjs${index}${member}`;
    },
  );
  const imports = modules.map((spec, i) => {
    const file = spec.endsWith(".js") ? spec : `${spec}.js`;
    return `import * as __cjs${i} from ${JSON.stringify(file)};`;
  });
  return `${imports.join("\n")}\n${body.replace(/^"use strict";/, "")}`;
}

/**
 * `allErrors: true` (validators.js) reports every problem, for people reading `kubectl agent
 * validate`. `allErrors: false` (validators-first-error.js) stops at the first one: its work and
 * memory stay bounded by the object's size, which the admission webhook needs for input from
 * anyone who can reach its port (an object with 400,000 bad array entries makes the all-errors
 * validator build 800,000 error objects; docs/admission.md).
 */
export function emitValidators(
  crds: CrdSource[],
  sourcePaths: string[],
  options: { allErrors: boolean; fileName: string } = { allErrors: true, fileName: "validators.js" },
): EmittedValidators {
  const ajv = new Ajv.default({
    code: { source: true, esm: true, lines: true },
    allErrors: options.allErrors,
    strict: true,
    // String lengths as UTF-16 units: avoids ajv's ucs2length runtime helper (a CommonJS
    // default export). Every length-bounded field is ASCII-only by pattern, so this counts
    // the same as the API server's rune count.
    unicode: false,
    logger: {
      log: (...args: unknown[]) => console.log(...args),
      // The unicode option above is deliberate; its deprecation notice is noise.
      warn: (...args: unknown[]) => {
        if (!String(args[0]).includes("option unicode")) console.warn(...args);
      },
      error: (...args: unknown[]) => console.error(...args),
    },
    // Enum, required and type errors all get a sentence in src/validation; keep the data out
    // of the generated code.
    verbose: false,
  });
  addFormats.default(ajv, ["date-time", "int32"]);
  const rules: CelRuleRecord[] = [];
  const exportsMap: Record<string, string> = {};
  for (const crd of crds) {
    const built = objectSchema(crd, "validation");
    ajv.addSchema(built.schema);
    rules.push(...built.rules);
    exportsMap[validatorName(crd.kind)] = crd.kind;
  }
  const header = slashHeader(sourcePaths.join(", "));
  const code = requiresToImports(standaloneCode.default(ajv, exportsMap));
  const js = formatScript(`${header}\n${code}`, options.fileName);
  const declarations = crds
    .map(
      (crd) =>
        `/** Ahead-of-time compiled validator for ${crd.kind} (${crd.group}/${crd.version}). */\nexport declare const ${validatorName(crd.kind)}: StandaloneValidator;`,
    )
    .join("\n");
  const dts = formatScript(
    `${header}\nimport type { ErrorObject } from "ajv";\n\nexport interface StandaloneValidator {\n  (data: unknown): boolean;\n  errors?: ErrorObject[] | null;\n}\n\n${declarations}\n`,
    options.fileName.replace(/\.js$/, ".d.ts"),
  );
  return { js, dts, rules };
}

export function emitCelRules(rules: CelRuleRecord[], sourcePaths: string[]): string {
  const body = `${slashHeader(sourcePaths.join(", "))}
/** A CEL rule of the CRDs and who enforces it (see docs/validation-rules.md). */
export interface CelRule {
  kind: string;
  location: string;
  rule: string;
  message: string;
  enforcedBy: "schema-and-api-server" | "api-server-only";
  schemaPath?: string;
  why?: string;
}

export const celRules: readonly CelRule[] = ${JSON.stringify(rules, null, 2)};
`;
  return formatScript(body, "cel-rules.ts");
}
