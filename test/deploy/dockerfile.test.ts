// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are Dockerfile ${ARG} syntax
/**
 * Invariants of the controller image (the default target) and the agent image (`--target agent`).
 * No docker engine runs here, so the Dockerfile is read, not built; `npm run build` and
 * `npm run build:agent` (the images' build steps) are what make dist/.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { buildInitPlan, requiredExecutables } from "../../src/run-pod/init/plan.js";
import { packagesFor } from "../../src/run-pod/init/prerequisites.js";
import { dockerignoreExcludes, execForm, parseInstructions, parseStages, type Stage } from "./dockerfile.js";
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

  it.each([
    [["scripts"], "scripts/build-agent.ts", true],
    [["scripts", "!scripts/build-agent.ts"], "scripts/build-agent.ts", false],
    [["scripts", "!scripts/build-agent.ts"], "scripts/test.sh", true],
    [["!scripts/build-agent.ts", "scripts"], "scripts/build-agent.ts", true],
    [["**/*.test.ts"], "src/a/b.test.ts", true],
    [["**/*.test.ts"], "b.test.ts", true],
    [["**/*.test.ts"], "src/a/b.ts", false],
    [[".env.*"], ".env.local", true],
    [["dist"], "distance", false],
  ])("dockerignore %j: %s excluded = %s", (patterns, path, excluded) => {
    expect(dockerignoreExcludes(patterns, path)).toBe(excluded);
  });
});

describe("Dockerfile", () => {
  it("is multi-stage on a pinned Node image (no floating tag)", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    // The agent image's final stage is the one without Node (checked below).
    for (const stage of stages.filter((s) => s.name !== "agent")) {
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
      "scripts/build-agent.ts",
    ];
    for (const path of copied) expect(dockerignoreExcludes(dockerignore, path), path).toBe(false);
    for (const path of ["node_modules", "dist", ".git", "test", "scripts/test.sh", "src/log.test.ts"]) {
      expect(dockerignoreExcludes(dockerignore, path), path).toBe(true);
    }
    for (const stage of stages) {
      for (const copy of keywords(stage, "COPY").filter((c) => !c.args.includes("--from="))) {
        const sources = copy.args.split(/\s+/).slice(0, -1);
        for (const s of sources) expect(copied, `COPY ${s}`).toContain(s.replace(/^\.\//, ""));
      }
    }
  });
});

describe("Dockerfile --target agent (AGENT_IMAGE)", () => {
  const agent = stageNamed("agent");

  it("is a named stage before the controller's, so the controller stays the default target", () => {
    expect(stages.indexOf(agent)).toBeLessThan(stages.length - 1);
    expect(final.name).toBe("runtime");
  });

  it("builds the executable with npm run build:agent, which runs scripts/build-agent.ts", () => {
    const build = stageNamed("agent-build");
    expect(build.image).toMatch(/^node:\d+\.\d+\.\d+-[a-z0-9-]+$/);
    // The executable and its hard links move to a directory of their own, which the agent stage copies.
    expect(keywords(build, "RUN").map((r) => r.args)).toContain(
      "npm run build:agent && mkdir /app/agent-bin && mv dist/agent/ai-agent dist/agent/ai-agent-* /app/agent-bin/",
    );
    expect(pkg.scripts["build:agent"]).toBe("tsx scripts/build-agent.ts");
    const copies = keywords(build, "COPY").map((c) => c.args);
    expect(copies).toContain("scripts/build-agent.ts ./scripts/build-agent.ts");
    expect(copies).toContain("src ./src");
    // build-agent.ts strips the executable when strip (binutils) is on PATH.
    expect(keywords(build, "RUN").some((r) => /apt-get install .*\bbinutils\b/.test(r.args))).toBe(true);
  });

  it("is a pinned glibc (Debian) base without Node: nothing from a node stage but the executable", () => {
    expect(agent.image).toMatch(/^debian:\d+\.\d+-slim$/);
    // Only the executable's directory comes from the build stage (docs/images.md: not a RUN --mount,
    // whose layer buildah's cache keyed on its text alone).
    expect(keywords(agent, "COPY").map((c) => c.args)).toEqual([
      "--from=agent-build /app/agent-bin/ /usr/local/bin/",
    ]);
    const runs = keywords(agent, "RUN").map((r) => r.args);
    for (const run of runs) expect(run).not.toMatch(/\b(nodejs|npm|node_modules)\b|--mount=/);
  });

  it("installs what the init can need (git and its CA bundle) and the reaper, nothing for installers it no longer runs", () => {
    const install = keywords(agent, "RUN").find((r) => /apt-get install/.test(r.args))?.args ?? "";
    const packages = /apt-get install -y --no-install-recommends ([^&\\]+)/
      .exec(install)?.[1]
      ?.trim()
      .split(/\s+/);
    // A plan with every tool active: repos, files, skills (claude) and a conversation.
    const everyTool = buildInitPlan(
      {
        AGENT_MODEL: "claude-sonnet-4-6",
        AGENT_REPOS: JSON.stringify([{ name: "app", url: "acme/app" }]),
        AGENT_FILES: JSON.stringify([{ path: "a.txt", url: "https://files.example/a" }]),
        AGENT_SKILLS_SOURCE: "https://skills.example",
        AGENT_CONVERSATION_ID: "c1",
        AGENT_CONVERSATION_SOURCE: "https://conversations.example",
      },
      { execDir: "/usr/local/bin" },
    );
    expect(everyTool.tools.map((t) => t.tool)).toEqual([
      "supervisor",
      "git",
      "files",
      "skills",
      "conversation",
    ]);
    const everyPlanNeeds = packagesFor(requiredExecutables(everyTool));
    expect(new Set(packages)).toEqual(new Set([...everyPlanNeeds, "tini"]));
  });

  it("holds one executable in /usr/local/bin with a hard link per program, in one layer", () => {
    // One COPY of the directory build:agent's executable and its hard links were moved to: a
    // directory copy keeps hard links (test/deploy/images.test.ts reads the built image's links).
    const build = stageNamed("agent-build");
    const move = keywords(build, "RUN").find((r) => r.args.includes("/app/agent-bin"))?.args ?? "";
    expect(move).toContain("mv dist/agent/ai-agent dist/agent/ai-agent-* /app/agent-bin/");
    const copies = keywords(agent, "COPY");
    expect(copies).toHaveLength(1);
    expect(copies[0]?.args).toBe("--from=agent-build /app/agent-bin/ /usr/local/bin/");
  });

  it("enters through ai-agent-init (the init container runs the image's entrypoint)", () => {
    const entry = keywords(agent, "ENTRYPOINT");
    expect(entry).toHaveLength(1);
    expect(execForm(entry[0]?.args ?? "")).toEqual(["/usr/local/bin/ai-agent-init"]);
  });
});
