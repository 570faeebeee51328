// @module-tag slow
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { generate, managedPaths } from "./generate.js";
import { run } from "./index.js";
import { compareTrees, writeTree } from "./tree.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** A scratch checkout holding a copy of schemas/crds/ (providers left out to keep it quick). */
let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "codegen-test-"));
  await cp(path.join(repoRoot, "schemas/crds"), path.join(root, "schemas/crds"), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function runCapturing(check: boolean): Promise<{ code: number; output: string }> {
  const lines: string[] = [];
  const code = await run({ root, check, log: (line) => lines.push(line) });
  return { code, output: lines.join("\n") };
}

describe("codegen:check", () => {
  it("passes right after codegen", async () => {
    expect((await runCapturing(false)).code).toBe(0);
    const check = await runCapturing(true);
    expect(check.output).toContain("up to date");
    expect(check.code).toBe(0);
  });

  it("names every file derived from a changed schema and tells the user to run codegen", async () => {
    await runCapturing(false);
    const schema = path.join(root, "schemas/crds/station.yaml");
    const text = await readFile(schema, "utf8");
    await writeFile(
      schema,
      text
        .replace("default: 30", "default: 45")
        .replace("description: Run environment and run-management limits.", "description: Changed."),
    );

    const check = await runCapturing(true);
    expect(check.code).toBe(1);
    expect(check.output).toContain("drifted: generated/crds/station.ts");
    expect(check.output).toContain("drifted: generated/crds/validators.js");
    expect(check.output).toContain("drifted: deploy/crds/station.yaml");
    expect(check.output).not.toContain("agent.ts");
    expect(check.output).toContain("Run `npm run codegen`");
  });

  it("reports a hand edit, a deleted file and a stray file", async () => {
    await runCapturing(false);
    await writeFile(path.join(root, "generated/crds/agent.ts"), "// edited by hand\n");
    await rm(path.join(root, "deploy/crds/agentdefinition.yaml"));
    await writeFile(path.join(root, "generated/crds/stray.ts"), "export {};\n");

    const check = await runCapturing(true);
    expect(check.code).toBe(1);
    expect(check.output).toContain("drifted: generated/crds/agent.ts");
    expect(check.output).toContain("missing: deploy/crds/agentdefinition.yaml");
    expect(check.output).toContain("extra:   generated/crds/stray.ts");
  });

  it("leaves the checkout untouched", async () => {
    await runCapturing(false);
    const agentTs = path.join(root, "generated/crds/agent.ts");
    await writeFile(agentTs, "// edited by hand\n");
    await runCapturing(true);
    expect(await readFile(agentTs, "utf8")).toBe("// edited by hand\n");
  });

  it("codegen removes stray files from the directories it owns", async () => {
    await runCapturing(false);
    await writeFile(path.join(root, "generated/crds/stray.ts"), "export {};\n");
    await runCapturing(false);
    const drift = await compareTrees(root, root, managedPaths);
    expect(drift).toEqual({ drifted: [], missing: [], extra: [] });
    await expect(readFile(path.join(root, "generated/crds/stray.ts"))).rejects.toThrow();
  });

  it("fails codegen on a CEL rule without a known equivalent", async () => {
    const schema = path.join(root, "schemas/crds/station.yaml");
    const text = await readFile(schema, "utf8");
    await writeFile(
      schema,
      text.replace(
        "              title: StationSpec\n",
        "              title: StationSpec\n              x-kubernetes-validations:\n                - rule: self.deadlineMinutes < 1000\n",
      ),
    );
    await expect(runCapturing(false)).rejects.toThrow(/self\.deadlineMinutes < 1000.*cel-equivalents\.ts/);
  });
});

describe("generate", () => {
  let files: Awaited<ReturnType<typeof generate>>;
  beforeAll(async () => {
    files = await generate({ schemasDir: path.join(repoRoot, "schemas") });
  });

  it("is deterministic: two runs give byte-identical files", async () => {
    const second = await generate({ schemasDir: path.join(repoRoot, "schemas") });
    expect([...second.keys()]).toEqual([...files.keys()]);
    for (const [file, content] of files) expect(second.get(file), file).toBe(content);
  });

  it("compiles every provider schema and puts a do-not-edit header naming the source on every file", () => {
    for (const name of ["anthropic", "gemini", "openai"]) {
      expect(files.get(`generated/providers/${name}.ts`)).toMatch(
        new RegExp(
          `^// Code generated by \`npm run codegen\` from schemas/providers/${name}\\.yaml\\. DO NOT EDIT\\.\\n`,
        ),
      );
    }
    for (const [file, content] of files) {
      expect(content.split("\n")[0], file).toMatch(
        /^(\/\/|#|<!--) Code generated by `npm run codegen` from (schemas|codegen)\/.+ DO NOT EDIT\.( -->)?$/,
      );
    }
  });

  it("matches what is committed (the drift check of this checkout)", async () => {
    await writeTree(root, files, managedPaths);
    expect(await compareTrees(root, repoRoot, managedPaths)).toEqual({ drifted: [], missing: [], extra: [] });
  });
});
