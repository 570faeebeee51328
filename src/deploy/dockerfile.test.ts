// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are Dockerfile ${ARG} syntax
/**
 * Invariants of the controller image. No docker engine runs here, so the Dockerfile is read,
 * not built; `npm run build` (the image's build step) is what makes dist/.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { execForm, parseInstructions, parseStages, type Stage } from "./dockerfile.js";
import { isBuiltin, valueImportGraph } from "./imports.js";
import { REPO_ROOT } from "./render.js";

const dockerfile = readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8");
const stages = parseStages(dockerfile);
const final = stages.at(-1) as Stage;
const dockerignore = readFileSync(join(REPO_ROOT, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#"));
const buildConfig = JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.build.json"), "utf8")) as {
  extends: string;
  compilerOptions: { outDir: string; rootDir: string; noEmit: boolean };
  include: string[];
};
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  type: string;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function keywords(stage: Stage, keyword: string) {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

function stageNamed(name: string): Stage {
  const stage = stages.find((s) => s.name === name);
  if (stage === undefined) throw new Error(`no stage ${name}`);
  return stage;
}

describe("parser", () => {
  it("joins continuations, skips comments and substitutes ARG defaults into FROM", () => {
    const text = "# c\nARG V=1.2.3\nFROM img:${V} AS a\nRUN a \\\n  b\n\nFROM other:$V\nUSER 7\n";
    expect(parseInstructions(text).map((i) => [i.keyword, i.args])).toEqual([
      ["ARG", "V=1.2.3"],
      ["FROM", "img:${V} AS a"],
      ["RUN", "a    b"],
      ["FROM", "other:$V"],
      ["USER", "7"],
    ]);
    expect(parseStages(text)).toEqual([
      { name: "a", image: "img:1.2.3", instructions: [{ keyword: "RUN", args: "a    b", line: 4 }] },
      { image: "other:1.2.3", instructions: [{ keyword: "USER", args: "7", line: 8 }] },
    ]);
    expect(() => parseStages("FROM x:${NOPE}\n")).toThrow("ARG NOPE has no default");
    expect(execForm('["node","a.js"]')).toEqual(["node", "a.js"]);
    expect(execForm("node a.js")).toBeUndefined();
  });
});

describe("Dockerfile", () => {
  it("is multi-stage on a pinned Node image (no floating tag)", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      expect(stage.image).toMatch(/^node:\d+\.\d+\.\d+-[a-z0-9-]+(@sha256:[0-9a-f]{64})?$/);
    }
    // Node major matches the toolchain's engines (>=20).
    const major = Number(/^node:(\d+)/.exec(final.image)?.[1]);
    expect(major).toBeGreaterThanOrEqual(20);
    expect(major % 2, "an even (LTS) Node major").toBe(0);
  });

  it("installs with npm ci and compiles with npm run build in the build stage", () => {
    const build = stageNamed("build");
    const runs = keywords(build, "RUN").map((r) => r.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs).toContain("npm run build");
    expect(pkg.scripts.build).toBe("tsc -p tsconfig.build.json");
  });

  it("ships no dev dependencies: node_modules comes only from an npm ci --omit=dev stage", () => {
    expect(keywords(final, "RUN").filter((r) => /\bnpm (ci|install|i)\b/.test(r.args))).toEqual([]);
    const copies = keywords(final, "COPY");
    const fromStages = copies.map((c) => /--from=(\S+)/.exec(c.args)?.[1]).filter((s) => s !== undefined);
    const nodeModules = copies.filter((c) => /node_modules/.test(c.args));
    expect(nodeModules).toHaveLength(1);
    const source = stageNamed(/--from=(\S+)/.exec(nodeModules[0]?.args ?? "")?.[1] ?? "");
    const installs = keywords(source, "RUN").filter((r) => /\bnpm ci\b/.test(r.args));
    expect(installs).toHaveLength(1);
    expect(installs[0]?.args).toMatch(/--omit=dev/);
    // From the build stage only dist/ is taken, never its (dev) node_modules.
    const fromBuild = copies.filter((c) => c.args.includes("--from=build"));
    expect(fromBuild.map((c) => c.args)).toEqual(["--from=build /app/dist ./dist"]);
    expect(fromStages.sort()).toEqual(["build", "prod-deps"]);
  });

  it("runs as a numeric non-root user", () => {
    const users = keywords(final, "USER");
    expect(users.length).toBeGreaterThan(0);
    const last = users.at(-1)?.args ?? "";
    const [uid, gid] = last.split(":");
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).not.toBe(0);
    if (gid !== undefined) expect(Number(gid)).not.toBe(0);
    // The Deployment runs as 1000; the image agrees.
    expect(last).toBe("1000:1000");
  });

  it("has a HEALTHCHECK against /healthz on HEALTH_PORT", () => {
    const hc = keywords(final, "HEALTHCHECK");
    expect(hc).toHaveLength(1);
    expect(hc[0]?.args).toContain("/healthz");
    expect(hc[0]?.args).toContain("HEALTH_PORT");
  });

  it("starts node on the compiled controller main, which tsconfig.build.json emits from src/controller/main.ts", () => {
    const entry = keywords(final, "ENTRYPOINT");
    expect(entry).toHaveLength(1);
    const argv = execForm(entry[0]?.args ?? "");
    expect(argv?.[0]).toBe("node");
    const script = argv?.at(-1) ?? "";
    expect(buildConfig.compilerOptions.noEmit).toBe(false);
    const outDir = buildConfig.compilerOptions.outDir;
    expect(script.startsWith(`${outDir}/`)).toBe(true);
    const sourceRel = relative(outDir, script).replace(/\.js$/, ".ts");
    expect(sourceRel).toBe("src/controller/main.ts");
    expect(buildConfig.compilerOptions.rootDir).toBe(".");
    expect(existsSync(join(REPO_ROOT, sourceRel)), `${sourceRel} exists`).toBe(true);
    expect(buildConfig.include).toContain("src");
  });

  it("needs only production dependencies at run time (the image has no dev dependencies)", () => {
    const graph = valueImportGraph(join(REPO_ROOT, "src", "controller", "main.ts"));
    expect(graph.files.length).toBeGreaterThan(1);
    for (const specifier of graph.packages) {
      if (isBuiltin(specifier)) continue;
      expect(Object.keys(pkg.dependencies), `${specifier} is imported at run time`).toContain(specifier);
    }
    // Everything reached is compiled into the image: inside the build's include, not a test.
    for (const file of graph.files) {
      const rel = relative(REPO_ROOT, file);
      expect(rel).not.toMatch(/\.test\.ts$/);
      expect(
        buildConfig.include.some((dir) => rel.startsWith(`${dir}/`)),
        rel,
      ).toBe(true);
    }
  });

  it('copies package.json into the runtime image (ESM needs its "type": "module")', () => {
    expect(pkg.type).toBe("module");
    expect(keywords(final, "COPY").some((c) => /^package\.json\s/.test(c.args))).toBe(true);
  });

  it(".dockerignore keeps what the build copies and drops the rest", () => {
    const copied = [
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "tsconfig.build.json",
      "src",
      "generated",
    ];
    for (const path of copied) expect(dockerignore, path).not.toContain(path);
    for (const path of ["node_modules", "dist", ".git", "test"]) expect(dockerignore).toContain(path);
    for (const stage of stages) {
      for (const copy of keywords(stage, "COPY").filter((c) => !c.args.includes("--from="))) {
        const sources = copy.args.split(/\s+/).slice(0, -1);
        for (const s of sources) expect(copied, `COPY ${s}`).toContain(s.replace(/^\.\//, ""));
      }
    }
  });
});
