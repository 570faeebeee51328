/**
 * The files `kubectl agent validate -f` reads, as kubectl's -f takes them: a file, a directory
 * (its .yaml, .yml and .json files; with -R also its subdirectories') or `-` for stdin.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { ManifestProblem, ManifestSource } from "./validate-manifests.js";

const MANIFEST_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

async function filesIn(dir: string, recursive: boolean): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const out: string[] = [];
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory() && recursive) out.push(...(await filesIn(full, true)));
    else if (e.isFile() && MANIFEST_EXTENSIONS.has(path.extname(e.name))) out.push(full);
  }
  return out;
}

export async function readManifestSources(
  paths: readonly string[],
  recursive: boolean,
  readStdin: () => Promise<string>,
): Promise<{ sources: ManifestSource[]; problems: ManifestProblem[] }> {
  const sources: ManifestSource[] = [];
  const problems: ManifestProblem[] = [];
  for (const p of paths) {
    if (p === "-") {
      sources.push({ file: "<stdin>", text: await readStdin() });
      continue;
    }
    try {
      const info = await stat(p);
      const files = info.isDirectory() ? await filesIn(p, recursive) : [p];
      if (info.isDirectory() && files.length === 0) {
        problems.push({
          file: p,
          document: 0,
          path: "",
          message: "the directory holds no .yaml, .yml or .json file.",
        });
      }
      for (const f of files) sources.push({ file: f, text: await readFile(f, "utf8") });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push({
        file: p,
        document: 0,
        path: "",
        message: code === "ENOENT" ? "does not exist." : `cannot be read: ${(err as Error).message}.`,
      });
    }
  }
  return { sources, problems };
}
