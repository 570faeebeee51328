/**
 * The import directions the layout promises (docs/architecture.md#import-directions):
 * - src/ ships in the images (Dockerfile, `npm run build`), test/ does not: no file of src/ other
 *   than a test imports from test/ (fakes, builders, fixtures).
 * - the reconcile core (src/core) is pure: no shipped file of it loads a module that does I/O
 *   (files, sockets, HTTP, processes, the Kubernetes client at run time, metrics), and its value
 *   imports stay inside src/core or generated/. Type-only imports are erased at build time and
 *   are fine when they name a package (core's actions name the Kubernetes types).
 * - the core is the lowest layer: none of its shipped files imports a file of src/ outside it, not
 *   even a type (the batch provider port lives in the core, src/batch implements it).
 * - no import circle among the shipped files of src/, type-only imports included.
 * - the model gateway (src/gateway) is a process of its own: none of its shipped files imports
 *   src/controller, not even a type, and nothing outside src/gateway imports it (the core's
 *   purity rules above keep the core from it too).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = path.join(ROOT, "src");
const CORE = path.join(SRC, "core");
const TEST = path.join(ROOT, "test");
const GATEWAY = path.join(SRC, "gateway");
const CONTROLLER = path.join(SRC, "controller");
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

/** The shipped file a relative specifier names (`./x.js` → x.ts, `./dir/index.js` → dir/index.ts). */
function resolveShipped(file: string, specifier: string, shipped: ReadonlySet<string>): string | undefined {
  const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, ".ts");
  for (const candidate of [target, `${target}.ts`, path.join(target.replace(/\.ts$/, ""), "index.ts")]) {
    if (shipped.has(candidate)) return candidate;
  }
  return undefined;
}

/** The import graph of shipped files: each file and the shipped files it imports, types included. */
function importGraph(files: string[], read: (file: string) => string): Map<string, string[]> {
  const shipped = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      imports(read(file)).flatMap(({ specifier }) => {
        if (!specifier.startsWith(".")) return [];
        const target = resolveShipped(file, specifier, shipped);
        return target ? [target] : [];
      }),
    ]),
  );
}

/** The circles of a graph: its strongly connected parts of more than one file, or of one importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const part: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      part.push(w);
    } while (w !== v);
    if (part.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(part.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Why a relative import of a core file reaches a higher layer, types included; undefined when it does not. */
function coreLayerViolation(file: string, ref: ImportRef): string | undefined {
  if (!ref.specifier.startsWith(".")) return undefined;
  const target = path.resolve(path.dirname(file), ref.specifier);
  if (inside(target, CORE) || inside(target, GENERATED)) return undefined;
  return `imports ${ref.typeOnly ? "a type from " : ""}${ref.specifier}, a layer above the core`;
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

describe("the core is the lowest layer", () => {
  it("no shipped file of src/core imports from src/ outside the core, not even a type", () => {
    const offenders = shippedFiles(CORE).flatMap((file) =>
      imports(readFileSync(file, "utf8")).flatMap((ref) => {
        const why = coreLayerViolation(file, ref);
        return why ? [`${path.relative(ROOT, file)} ${why}`] : [];
      }),
    );
    expect(offenders).toEqual([]);
  });
});

describe("no import circle in src/", () => {
  it("the shipped files of src/ import each other without a circle, type-only imports included", () => {
    const graph = importGraph(shippedFiles(SRC), (file) => readFileSync(file, "utf8"));
    expect(circles(graph).map((part) => part.map((file) => path.relative(ROOT, file)))).toEqual([]);
  });
});

/** Why an import breaks the gateway's separation from the controller; undefined when it does not. */
function gatewayViolation(file: string, ref: ImportRef): string | undefined {
  if (!ref.specifier.startsWith(".")) return undefined;
  const target = path.resolve(path.dirname(file), ref.specifier);
  if (inside(file, GATEWAY) && inside(target, CONTROLLER)) return `imports ${ref.specifier}, the controller`;
  if (!inside(file, GATEWAY) && inside(target, GATEWAY)) return `imports ${ref.specifier}, the gateway`;
  return undefined;
}

describe("the gateway and the controller stay apart", () => {
  it("no shipped file of src/gateway imports src/controller, and no shipped file outside it imports src/gateway", () => {
    const offenders = shippedFiles(SRC).flatMap((file) =>
      imports(readFileSync(file, "utf8")).flatMap((ref) => {
        const why = gatewayViolation(file, ref);
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

  it("finds a circle through type-only imports and an index file, and none in a line", () => {
    const file = (name: string) => path.join(SRC, name);
    const texts: Record<string, string> = {
      [file("a.ts")]: 'import type { B } from "./b/index.js";',
      [file("b/index.ts")]: 'export { c } from "../c.js";',
      [file("c.ts")]: 'import { a } from "./a.js";\nimport "node:fs";',
      [file("d.ts")]: 'import { a } from "./a.js";',
      [file("e.ts")]: 'import { e } from "./e.js";',
    };
    const graph = importGraph(Object.keys(texts), (f) => texts[f] ?? "");
    expect(circles(graph)).toEqual([[file("a.ts"), file("b/index.ts"), file("c.ts")], [file("e.ts")]]);
    delete texts[file("c.ts")];
    expect(circles(importGraph(Object.keys(texts), (f) => texts[f] ?? ""))).toEqual([[file("e.ts")]]);
  });

  it("names a core import of a higher layer, a type-only one included", () => {
    const file = path.join(CORE, "example.ts");
    expect(coreLayerViolation(file, { specifier: "../batch/provider.js", typeOnly: true })).toBe(
      "imports a type from ../batch/provider.js, a layer above the core",
    );
    expect(coreLayerViolation(file, { specifier: "../kube/client.js", typeOnly: false })).toBe(
      "imports ../kube/client.js, a layer above the core",
    );
    expect(coreLayerViolation(file, { specifier: "./pricing/prices.js", typeOnly: true })).toBe(undefined);
    expect(coreLayerViolation(file, { specifier: "@kubernetes/client-node", typeOnly: true })).toBe(
      undefined,
    );
  });

  it("names a gateway import of the controller and an import of the gateway from outside it", () => {
    const gatewayFile = path.join(GATEWAY, "proxy.ts");
    expect(gatewayViolation(gatewayFile, { specifier: "../controller/config.js", typeOnly: true })).toBe(
      "imports ../controller/config.js, the controller",
    );
    expect(gatewayViolation(gatewayFile, { specifier: "../log.js", typeOnly: false })).toBe(undefined);
    expect(gatewayViolation(gatewayFile, { specifier: "./routes.js", typeOnly: false })).toBe(undefined);
    const controllerFile = path.join(CONTROLLER, "main.ts");
    expect(gatewayViolation(controllerFile, { specifier: "../gateway/credential.js", typeOnly: false })).toBe(
      "imports ../gateway/credential.js, the gateway",
    );
    const coreFile = path.join(CORE, "run-job", "env.ts");
    expect(gatewayViolation(coreFile, { specifier: "../../gateway/vendors.js", typeOnly: true })).toBe(
      "imports ../../gateway/vendors.js, the gateway",
    );
  });
});
