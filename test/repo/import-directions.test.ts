/**
 * The import directions the layout promises (docs/architecture.md#import-directions):
 * - src/ ships in the images (Dockerfile, `npm run build`), test/ does not: no file of src/ other
 *   than a test imports from test/ (fakes, builders, fixtures).
 * - the reconcile core (src/core) is pure: no shipped file of it loads a module that does I/O
 *   (files, sockets, HTTP, processes, the Kubernetes client at run time, metrics), and its value
 *   imports stay inside src/core or generated/. Type-only imports are erased at build time and
 *   are fine (core's actions name the Kubernetes and batch types).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = path.join(ROOT, "src");
const CORE = path.join(SRC, "core");
const TEST = path.join(ROOT, "test");
const GENERATED = path.join(ROOT, "generated");

/** Modules that read or write the world: node's I/O built-ins and the I/O packages we depend on. */
const IO_MODULES = new Set([
  ...["fs", "fs/promises", "net", "http", "https", "http2", "tls", "dgram", "dns", "dns/promises"],
  ...["child_process", "cluster", "worker_threads", "os", "readline", "process", "inspector"],
  ...["undici", "@kubernetes/client-node", "prom-client", "hono", "@hono/node-server", "tar"],
]);

interface ImportRef {
  specifier: string;
  /** `import type …` / `export type … from`: erased by the compiler, loads nothing at run time. */
  typeOnly: boolean;
}

function shippedFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return shippedFiles(full);
    return /\.ts$/.test(e.name) && !e.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Static imports, re-exports and dynamic imports, with whether each is type-only. */
function imports(text: string): ImportRef[] {
  const found: ImportRef[] = [];
  const statement = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^;"'()]*?\sfrom\s*)?["']([^"']+)["']/g;
  for (const m of text.matchAll(statement)) {
    if (m[2]) found.push({ specifier: m[2], typeOnly: Boolean(m[1]) });
  }
  for (const m of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) {
    if (m[1]) found.push({ specifier: m[1], typeOnly: false });
  }
  return found;
}

const bareName = (specifier: string) => specifier.replace(/^node:/, "");
const inside = (file: string, dir: string) => file === dir || file.startsWith(`${dir}${path.sep}`);

/** Why one import breaks the core's purity, or undefined when it does not. */
function coreViolation(file: string, ref: ImportRef): string | undefined {
  if (ref.typeOnly) return undefined;
  if (ref.specifier.startsWith(".")) {
    const target = path.resolve(path.dirname(file), ref.specifier);
    if (inside(target, CORE) || inside(target, GENERATED)) return undefined;
    return `imports ${ref.specifier}, outside src/core and generated/`;
  }
  return IO_MODULES.has(bareName(ref.specifier)) ? `imports the I/O module ${ref.specifier}` : undefined;
}

describe("src/ does not depend on test/", () => {
  it("no shipped file of src/ imports a module under test/", () => {
    const offenders = shippedFiles(SRC).flatMap((file) =>
      imports(readFileSync(file, "utf8"))
        .filter(({ specifier }) => {
          if (!specifier.startsWith(".")) return false;
          return inside(path.resolve(path.dirname(file), specifier), TEST);
        })
        .map(({ specifier }) => `${path.relative(ROOT, file)} imports ${specifier}`),
    );
    expect(offenders).toEqual([]);
  });
});

describe("src/core does no I/O", () => {
  it("no shipped file of src/core loads an I/O module or a module outside the core", () => {
    const offenders = shippedFiles(CORE).flatMap((file) =>
      imports(readFileSync(file, "utf8")).flatMap((ref) => {
        const why = coreViolation(file, ref);
        return why ? [`${path.relative(ROOT, file)} ${why}`] : [];
      }),
    );
    expect(offenders).toEqual([]);
  });
});

describe("the import reader (the checks can fail)", () => {
  const sample = [
    'import { readFileSync } from "node:fs";',
    'import type { V1Job } from "@kubernetes/client-node";',
    "import {\n  type V1Pod,\n  CoreV1Api,\n} from '@kubernetes/client-node';",
    'export type { BatchProviderName } from "../batch/provider.js";',
    'export { isTerminal } from "./types.js";',
    'import "undici";',
    'const m = await import("node:child_process");',
    'import { minimalAgent } from "../../test/support/validation-fixtures.js";',
  ].join("\n");

  it("finds every form and tells type-only imports apart", () => {
    expect(imports(sample)).toEqual([
      { specifier: "node:fs", typeOnly: false },
      { specifier: "@kubernetes/client-node", typeOnly: true },
      { specifier: "@kubernetes/client-node", typeOnly: false },
      { specifier: "../batch/provider.js", typeOnly: true },
      { specifier: "./types.js", typeOnly: false },
      { specifier: "undici", typeOnly: false },
      { specifier: "../../test/support/validation-fixtures.js", typeOnly: false },
      { specifier: "node:child_process", typeOnly: false },
    ]);
  });

  it("names what breaks the core's purity and lets the rest through", () => {
    const file = path.join(CORE, "example.ts");
    const verdicts = imports(sample).map((ref) => coreViolation(file, ref));
    expect(verdicts).toEqual([
      "imports the I/O module node:fs",
      undefined,
      "imports the I/O module @kubernetes/client-node",
      undefined,
      undefined,
      "imports the I/O module undici",
      "imports ../../test/support/validation-fixtures.js, outside src/core and generated/",
      "imports the I/O module node:child_process",
    ]);
    expect(coreViolation(file, { specifier: "../../generated/crds/agent.js", typeOnly: false })).toBe(
      undefined,
    );
    expect(coreViolation(file, { specifier: "node:crypto", typeOnly: false })).toBe(undefined);
  });
});
