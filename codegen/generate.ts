/**
 * Everything codegen produces, as a map from repository-relative path to file content.
 * Input and output locations are parameters so tests can run it against copies.
 */
import path from "node:path";
import { baseName, readCrds } from "./crd-source.js";
import { emitConfig, listConfigSchemas } from "./emit-config.js";
import { emitDeployCrd } from "./emit-deploy.js";
import { emitProviderTypes, listProviderSchemas } from "./emit-providers.js";
import { emitReference, REFERENCE_PATH } from "./emit-reference.js";
import { emitCrdIndex, emitCrdTypes, emitMetaTypes } from "./emit-types.js";
import { emitCelRules, emitValidators } from "./emit-validators.js";
import { renderStateMachineDoc, STATE_MACHINE_DOC_PATH } from "./state-machine-doc.js";

/**
 * Directories and single files (relative to the output root) codegen owns entirely: anything else
 * in those directories is extra.
 */
export const managedPaths = ["generated", "deploy/crds", "docs/reference", STATE_MACHINE_DOC_PATH] as const;

export interface GenerateOptions {
  /** Directory holding `crds/`, `providers/` and `config/`. */
  schemasDir: string;
  /** How sources are named in headers; defaults to `schemas`. */
  schemasLabel?: string;
}

export type GeneratedFiles = Map<string, string>;

export async function generate(options: GenerateOptions): Promise<GeneratedFiles> {
  const label = options.schemasLabel ?? "schemas";
  const files: GeneratedFiles = new Map();
  const crdDir = path.join(options.schemasDir, "crds");
  const crds = await readCrds(crdDir);
  if (crds.length === 0) throw new Error(`no CRD manifests found in ${crdDir}`);
  const sources = crds.map((crd) => `${label}/crds/${crd.fileName}`);

  for (const [i, crd] of crds.entries()) {
    const source = sources[i] ?? crd.fileName;
    const base = baseName(crd.fileName);
    files.set(`generated/crds/${base}.ts`, await emitCrdTypes(crd, source));
    files.set(`deploy/crds/${crd.fileName}`, emitDeployCrd(crd, source));
  }

  files.set("generated/crds/meta.ts", await emitMetaTypes("codegen/object-meta.ts"));
  files.set(
    "generated/crds/index.ts",
    emitCrdIndex(
      crds.map((c) => baseName(c.fileName)),
      sources,
    ),
  );

  const validators = emitValidators(crds, sources);
  files.set("generated/crds/validators.js", validators.js);
  files.set("generated/crds/validators.d.ts", validators.dts);
  const firstError = emitValidators(crds, sources, {
    allErrors: false,
    fileName: "validators-first-error.js",
  });
  files.set("generated/crds/validators-first-error.js", firstError.js);
  files.set("generated/crds/validators-first-error.d.ts", firstError.dts);
  files.set("generated/crds/cel-rules.ts", emitCelRules(validators.rules, sources));
  files.set(REFERENCE_PATH, emitReference(crds, sources));
  files.set(STATE_MACHINE_DOC_PATH, renderStateMachineDoc());

  const providerDir = path.join(options.schemasDir, "providers");
  for (const name of await listProviderSchemas(providerDir)) {
    const ts = await emitProviderTypes(path.join(providerDir, name), `${label}/providers/${name}`);
    files.set(`generated/providers/${baseName(name)}.ts`, ts);
  }
  const configDir = path.join(options.schemasDir, "config");
  for (const name of await listConfigSchemas(configDir)) {
    const emitted = await emitConfig(path.join(configDir, name), `${label}/config/${name}`);
    files.set(`generated/config/${baseName(name)}.ts`, emitted.types);
    files.set(`generated/config/${baseName(name)}-validator.js`, emitted.js);
    files.set(`generated/config/${baseName(name)}-validator.d.ts`, emitted.dts);
  }
  return new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
