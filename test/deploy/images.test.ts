// @module-tag slow
/**
 * The Dockerfile's two images built for real with buildah (`npm run build:images`, docs/images.md),
 * and what each holds. dockerfile.test.ts reads the Dockerfile; this reads the built images. The
 * first build on a machine takes ~2 min (the base stand-ins, then both targets); later ones seconds.
 */
import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { BUNDLE, buildAgent, LINK_NAMES } from "../../scripts/build-agent.js";
import {
  buildImages,
  type ImageConfig,
  type ImagesManifest,
  imageConfig,
  imagesProblem,
  withImageRoot,
} from "../harness/images.js";
import { execForm, parseStages } from "./dockerfile.js";
import { REPO_ROOT } from "./render.js";

const run = promisify(execFile);
const problem = imagesProblem();
const stages = parseStages(readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8"));
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  version: string;
};

function stageArgs(stage: string, keyword: string): string {
  const found = stages.find((s) => s.name === stage)?.instructions.find((i) => i.keyword === keyword);
  if (found === undefined) throw new Error(`the Dockerfile's ${stage} stage has no ${keyword}`);
  return found.args;
}

/** True when an ELF executable names a program interpreter (is dynamically linked). */
function hasInterpreter(elf: Buffer): boolean {
  expect(elf.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) if (elf.readUInt32LE(phoff + i * phentsize) === 3) return true; // PT_INTERP
  return false;
}

/** Runs a program of the image with its root filesystem as `/`. */
async function inImage(root: string, argv: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run("chroot", [root, ...argv], {
      env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
    });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

describe.skipIf(problem !== "")(`images built with buildah${problem ? ` (skipped: ${problem})` : ""}`, () => {
  let manifest: ImagesManifest;
  // Read by id: the tag names the newest build of any checkout on this machine (they share the store).
  let agent: { name: string; id: string; config: ImageConfig };
  let controller: { name: string; id: string; config: ImageConfig };

  beforeAll(async () => {
    // The same commit's executable, made on this machine the way users make it.
    await buildAgent();
    manifest = await buildImages(["agent", "controller"], (line) => process.stderr.write(`${line}\n`));
    const built = async (key: "agent" | "controller") => {
      const image = manifest[key];
      if (image === undefined) throw new Error(`scripts/images/build.sh built no ${key} image`);
      return { name: image.name, id: image.id, config: await imageConfig(manifest, image.id) };
    };
    agent = await built("agent");
    controller = await built("controller");
  }, 900_000);

  it("tags them with the release names the controller and the Deployment use", () => {
    expect(agent.name).toBe(`ghcr.io/re-cinq/ai-agent-run-pod:v${pkg.version}`);
    expect(controller.name).toBe(`ghcr.io/re-cinq/ai-agent-controller:v${pkg.version}`);
    const deployment = readFileSync(join(REPO_ROOT, "deploy/base/controller-deployment.yaml"), "utf8");
    expect(deployment).toContain(`image: ${controller.name}`);
    for (const image of [manifest.agent, manifest.controller]) {
      expect(statSync(image?.archive ?? "").size).toBeGreaterThan(10 * 1024 * 1024);
    }
  });

  describe("agent image (--target agent)", () => {
    it("enters through ai-agent-init and sets no user (the pod spec sets every container's)", () => {
      expect(agent.config.Entrypoint).toEqual(execForm(stageArgs("agent", "ENTRYPOINT")));
      expect(agent.config.Entrypoint).toEqual(["/usr/local/bin/ai-agent-init"]);
      expect(agent.config.User ?? "").toBe("");
    });

    it("holds the executable npm run build:agent makes from this commit, once, with a hard link per program", async () => {
      const bundle = await readFile(BUNDLE);
      await withImageRoot(manifest, agent.id, async (root) => {
        const exe = join(root, "usr/local/bin/ai-agent");
        const main = await stat(exe);
        expect(main.mode & 0o111).not.toBe(0);
        expect(main.nlink).toBe(1 + LINK_NAMES.length);
        for (const link of LINK_NAMES) {
          expect((await stat(join(root, "usr/local/bin", link))).ino, link).toBe(main.ino);
        }
        // The SEA embeds its bundle verbatim (its V8 code cache differs from build to build).
        const image = await readFile(exe);
        expect(image.indexOf(bundle), "the image's ai-agent embeds dist/agent/ai-agent.cjs").toBeGreaterThan(
          0,
        );
        // It runs on the image's glibc without Node: invoked by its own name it asks for a program.
        const usage = await inImage(root, ["/usr/local/bin/ai-agent"]);
        expect(usage.code).not.toBe(0);
        expect(usage.out).toContain("ai-agent: no program given");
      });
    });

    it("carries the reaper (tini's static build), git and the CA bundle, and no Node", async () => {
      await withImageRoot(manifest, agent.id, async (root) => {
        const reaper = await readFile(join(root, "usr/local/bin/ai-agent-reaper"));
        expect(reaper.equals(await readFile(join(root, "usr/bin/tini-static")))).toBe(true);
        expect(hasInterpreter(reaper), "the reaper is statically linked").toBe(false);
        expect((await inImage(root, ["/usr/local/bin/ai-agent-reaper", "--version"])).out).toMatch(
          /tini version/,
        );
        const git = await inImage(root, ["git", "--version"]);
        expect(git).toMatchObject({ code: 0 });
        expect(git.out).toMatch(/^git version \d/);
        expect((await stat(join(root, "etc/ssl/certs/ca-certificates.crt"))).size).toBeGreaterThan(1000);
        for (const path of ["usr/local/bin/node", "usr/bin/node", "usr/local/lib/node_modules"]) {
          await expect(stat(join(root, path)), path).rejects.toThrow(/ENOENT/);
        }
      });
    });
  });

  describe("controller image (the default target, runtime)", () => {
    it("runs the compiled controller with node as uid 1000, a user the image defines", async () => {
      expect(controller.config.User).toBe("1000:1000");
      expect(controller.config.Entrypoint).toEqual(execForm(stageArgs("runtime", "ENTRYPOINT")));
      expect(controller.config.WorkingDir).toBe("/app");
      expect(Object.keys(controller.config.ExposedPorts ?? {}).sort()).toEqual(["8081/tcp", "8082/tcp"]);
      await withImageRoot(manifest, controller.id, async (root) => {
        const passwd = await readFile(join(root, "etc/passwd"), "utf8");
        expect(passwd).toMatch(/^node:x:1000:1000:/m);
        const script = controller.config.Entrypoint?.at(-1) ?? "";
        expect((await stat(join(root, "app", script))).isFile()).toBe(true);
        const node = await inImage(root, ["/usr/local/bin/node", "--version"]);
        expect(node.out.trim()).toBe(process.version);
        // The compiled ESM loads (package.json's "type": "module" is in the image).
        const load = await inImage(root, [
          "/usr/local/bin/node",
          "-e",
          "import('/app/dist/src/controller/config.js').then(m => console.log(typeof m.parseConfig))",
        ]);
        expect(load).toEqual({ code: 0, out: "function\n" });
      });
    });

    it("ships every package the lockfile needs at run time and none it marks dev-only", async () => {
      const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
        packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
      };
      const installed = Object.entries(lock.packages).filter(([path]) => path.startsWith("node_modules/"));
      const devOnly = installed.filter(([, p]) => p.dev === true).map(([path]) => path);
      const runtime = installed
        .filter(([, p]) => !p.dev && !p.optional && !p.devOptional)
        .map(([path]) => path);
      expect(devOnly).toContain("node_modules/vitest");
      expect(runtime).toContain("node_modules/@kubernetes/client-node");
      await withImageRoot(manifest, controller.id, async (root) => {
        for (const path of runtime) {
          expect((await stat(join(root, "app", path, "package.json"))).isFile(), path).toBe(true);
        }
        for (const path of devOnly) {
          await expect(stat(join(root, "app", path)), path).rejects.toThrow(/ENOENT/);
        }
      });
    });

    it("keeps the Dockerfile's HEALTHCHECK (a docker-format image)", () => {
      const hc = controller.config.Healthcheck;
      const args = stageArgs("runtime", "HEALTHCHECK");
      expect(hc?.Test).toEqual(["CMD", ...(execForm(args.slice(args.indexOf("CMD") + 3).trim()) ?? [])]);
      expect(hc?.Test?.join(" ")).toContain("/healthz");
      expect(hc).toMatchObject({ Interval: 15e9, Timeout: 3e9, StartPeriod: 5e9, Retries: 3 });
    });
  });
});
