import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isBuiltin, valueImportGraph } from "./imports.js";

describe("valueImportGraph", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "imports-"));
    await writeFile(
      join(dir, "main.ts"),
      [
        'import { a } from "./a.js";',
        'import type { T } from "typeonly-pkg";',
        'import {\n  b,\n} from "@scope/pkg/sub";',
        'import "side-effect";',
        'export * from "./b.js";',
        'const m = await import("dyn-pkg");',
        'import { readFileSync } from "node:fs";',
      ].join("\n"),
    );
    await writeFile(
      join(dir, "a.ts"),
      'import type { X } from "./types.js";\nexport { y } from "lodash/fp";\n',
    );
    await writeFile(join(dir, "b.ts"), "export const b = 1;\n");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("follows value imports, skips type-only ones, and names packages", () => {
    const g = valueImportGraph(join(dir, "main.ts"));
    expect(g.packages).toEqual(["@scope/pkg", "dyn-pkg", "lodash", "node:fs", "side-effect"]);
    expect(g.files.map((f) => f.slice(dir.length + 1))).toEqual(["a.ts", "b.ts", "main.ts"]);
  });

  it("names an unresolvable relative import", async () => {
    await writeFile(join(dir, "bad.ts"), 'import { z } from "./missing.js";\n');
    expect(() => valueImportGraph(join(dir, "bad.ts"))).toThrow('cannot resolve import "./missing.js"');
  });

  it("knows builtins", () => {
    expect(isBuiltin("node:fs")).toBe(true);
    expect(isBuiltin("fs")).toBe(true);
    expect(isBuiltin("undici")).toBe(false);
  });
});
