/**
 * src/ ships in the images (Dockerfile, `npm run build`), test/ does not: no file of src/ other than
 * a test may import from test/ (fakes, builders, fixtures such as test/support/validation-fixtures.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = path.dirname(fileURLToPath(import.meta.url));
const TEST = path.resolve(SRC, "../test");

function shippedFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return shippedFiles(full);
    return /\.ts$/.test(e.name) && !e.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Relative module specifiers of static imports, re-exports and dynamic imports. */
function relativeSpecifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)) {
    if (m[1]) found.push(m[1]);
  }
  return found;
}

describe("src/ does not depend on test/", () => {
  it("no shipped file of src/ imports a module under test/", () => {
    const offenders = shippedFiles(SRC).flatMap((file) =>
      relativeSpecifiers(readFileSync(file, "utf8"))
        .filter((spec) => {
          const target = path.resolve(path.dirname(file), spec);
          return target === TEST || target.startsWith(`${TEST}${path.sep}`);
        })
        .map((spec) => `${path.relative(SRC, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it("sees an import into test/ when there is one (the check can fail)", () => {
    const spec = relativeSpecifiers(
      'import { minimalAgent } from "../../test/support/validation-fixtures.js";',
    );
    expect(spec).toEqual(["../../test/support/validation-fixtures.js"]);
    expect(path.resolve(SRC, "validation", spec[0] ?? "").startsWith(TEST)).toBe(true);
  });
});
