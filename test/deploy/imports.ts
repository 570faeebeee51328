/**
 * The packages the controller loads at run time: follows the value imports (not `import type`)
 * of the TypeScript sources from an entry file. Lets a test check that the production image,
 * which has no dev dependencies, can load everything the entry point reaches.
 */
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, resolve } from "node:path";

// `import x from "m"`, `import {a} from "m"`, `export {a} from "m"`, `export * from "m"`,
// `import "m"`, `await import("m")`. Type-only forms are filtered afterwards.
const IMPORT_RE =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^;"'()]*?\sfrom\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

export interface ImportGraph {
  /** Repository files reached, absolute paths. */
  files: string[];
  /** Bare specifiers (package names, node: builtins) reached by value imports. */
  packages: string[];
}

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}

function resolveLocal(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, ".ts"), base, `${base}.ts`, resolve(base, "index.ts")]) {
    if (existsSync(candidate) && !candidate.endsWith("/")) return candidate;
  }
  throw new Error(`${from}: cannot resolve import ${JSON.stringify(specifier)}`);
}

export function valueImportGraph(entry: string): ImportGraph {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    // Declaration files and plain JS carry no TS type-only syntax to skip.
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(IMPORT_RE)) {
      const typeOnly = m[2] !== undefined;
      const specifier = m[3] ?? m[4];
      if (specifier === undefined || typeOnly) continue;
      if (specifier.startsWith(".")) {
        const target = resolveLocal(file, specifier);
        if (!target.endsWith(".d.ts")) pending.push(target);
      } else {
        packages.add(specifier.startsWith("node:") ? specifier : packageName(specifier));
      }
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}

export function isBuiltin(specifier: string): boolean {
  return specifier.startsWith("node:") || builtinModules.includes(specifier);
}
