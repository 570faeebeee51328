/** Writing generated files under a root and comparing two roots for the drift check. */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GeneratedFiles } from "./generate.js";

/**
 * Every file below `root/dir`, as root-relative POSIX paths, sorted. Missing dir = none; a file
 * (a managed path that is a single file) lists itself.
 */
export async function listFiles(root: string, dir: string): Promise<string[]> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(path.join(root, dir), { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return [];
    if (code === "ENOTDIR") return [dir];
    throw error;
  }
  const out: string[] = [];
  for (const entry of entries) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await listFiles(root, rel)));
    else out.push(rel);
  }
  return out.sort();
}

/** Replaces the managed directories under `root` with exactly `files`. */
export async function writeTree(
  root: string,
  files: GeneratedFiles,
  managed: readonly string[],
): Promise<void> {
  for (const dir of managed) {
    for (const rel of await listFiles(root, dir)) {
      if (!files.has(rel)) await rm(path.join(root, rel));
    }
  }
  for (const [rel, content] of files) {
    const target = path.join(root, rel);
    await mkdir(path.dirname(target), { recursive: true });
    let current: string | undefined;
    try {
      current = await readFile(target, "utf8");
    } catch {
      current = undefined;
    }
    if (current !== content) await writeFile(target, content);
  }
}

export interface Drift {
  /** Present in both, different content. */
  drifted: string[];
  /** Codegen produces it, the checkout lacks it. */
  missing: string[];
  /** In the checkout's managed directories, codegen does not produce it. */
  extra: string[];
}

export async function compareTrees(
  expectedRoot: string,
  actualRoot: string,
  managed: readonly string[],
): Promise<Drift> {
  const drift: Drift = { drifted: [], missing: [], extra: [] };
  for (const dir of managed) {
    const expected = await listFiles(expectedRoot, dir);
    const actual = new Set(await listFiles(actualRoot, dir));
    for (const rel of expected) {
      if (!actual.has(rel)) {
        drift.missing.push(rel);
        continue;
      }
      actual.delete(rel);
      const [a, b] = await Promise.all([
        readFile(path.join(expectedRoot, rel)),
        readFile(path.join(actualRoot, rel)),
      ]);
      if (!a.equals(b)) drift.drifted.push(rel);
    }
    drift.extra.push(...[...actual].sort());
  }
  return drift;
}

export function hasDrift(drift: Drift): boolean {
  return drift.drifted.length + drift.missing.length + drift.extra.length > 0;
}

export function describeDrift(drift: Drift): string {
  const lines = [
    ...drift.drifted.map((f) => `  drifted: ${f} (differs from what codegen produces)`),
    ...drift.missing.map((f) => `  missing: ${f} (codegen produces it, the checkout lacks it)`),
    ...drift.extra.map((f) => `  extra:   ${f} (not produced by codegen)`),
  ];
  return `generated files are out of date with schemas/:\n${lines.join("\n")}\nRun \`npm run codegen\` and commit the result.`;
}
