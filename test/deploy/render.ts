/**
 * Renders the kustomize tree under deploy/ with `kubectl kustomize` (no API server needed), for
 * the manifest tests. The CRDs under deploy/crds are generated from schemas/crds by codegen;
 * when a checkout has not generated them yet, the staged copy takes them from schemas/crds.
 */
import { execFile } from "node:child_process";
import { access, copyFile, cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);

export const REPO_ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

export const CRD_FILES = ["agent.yaml", "station.yaml", "agentdefinition.yaml", "modelusage.yaml"] as const;

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are asserted field by field in tests
  [field: string]: any;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** `kubectl kustomize <dir>` parsed into objects; throws with kubectl's stderr on failure. */
export async function renderKustomize(dir: string): Promise<K8sObject[]> {
  let stdout: string;
  try {
    ({ stdout } = await run("kubectl", ["kustomize", dir], { maxBuffer: 64 * 1024 * 1024 }));
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`kubectl kustomize ${dir} failed: ${stderr || String(err)}`);
  }
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(stdout)) {
    if (doc.errors.length > 0) throw new Error(`kustomize output is not YAML: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value !== null) objects.push(value);
  }
  return objects;
}

export interface StagedInstall {
  /** Directory holding kustomization.yaml and a copy of deploy/ as ./deploy. */
  dir: string;
  /** CRD files taken from schemas/crds because deploy/crds lacked them. */
  crdsFromSchemas: string[];
  cleanup(): Promise<void>;
}

/**
 * A temporary install the way the docs describe it from a checkout:
 * `resources: [deploy]`, `components: [deploy/components/<name>...]`.
 */
export async function stageInstall(components: readonly string[]): Promise<StagedInstall> {
  const dir = await mkdtemp(join(tmpdir(), "deploy-"));
  await cp(join(REPO_ROOT, "deploy"), join(dir, "deploy"), { recursive: true });
  const crdsFromSchemas: string[] = [];
  await mkdir(join(dir, "deploy", "crds"), { recursive: true });
  for (const file of CRD_FILES) {
    const target = join(dir, "deploy", "crds", file);
    if (!(await exists(target))) {
      await copyFile(join(REPO_ROOT, "schemas", "crds", file), target);
      crdsFromSchemas.push(file);
    }
  }
  const kustomization = [
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources:",
    "  - deploy",
    ...(components.length > 0 ? ["components:", ...components.map((c) => `  - deploy/components/${c}`)] : []),
    "",
  ].join("\n");
  await writeFile(join(dir, "kustomization.yaml"), kustomization);
  return { dir, crdsFromSchemas, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Renders base + the given components. */
export async function renderInstall(components: readonly string[] = []): Promise<K8sObject[]> {
  const staged = await stageInstall(components);
  try {
    return await renderKustomize(staged.dir);
  } finally {
    await staged.cleanup();
  }
}

export function findObject(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

export function objectKey(o: K8sObject): string {
  return `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}
