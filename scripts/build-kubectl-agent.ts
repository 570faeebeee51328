/**
 * `npm run build:kubectl-agent`: the kubectl plugin as one self-contained executable, made the way
 * scripts/build-agent.ts makes the run-pod programs (docs/run-pod.md, "Packaging"): src/cli/main.ts
 * bundled by esbuild into one CommonJS file, a Node single executable application blob from it,
 * injected with postject into a (stripped) copy of the running Node. Writes
 * dist/kubectl-agent/kubectl-agent and the hard link kubectl_complete-agent (kubectl's name for a
 * plugin's completion helper). Also writes the bundle, dist/kubectl-agent/kubectl-agent.cjs, which
 * any Node ≥ 20 runs as is. docs/kubectl-plugin.md.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import {
  access,
  chmod,
  copyFile,
  link,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build, type Plugin } from "esbuild";
import { bundleProblems } from "./build-agent.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRY = path.join(ROOT, "src", "cli", "main.ts");
export const OUT_DIR = path.join(ROOT, "dist", "kubectl-agent");
export const EXECUTABLE = path.join(OUT_DIR, "kubectl-agent");
export const BUNDLE = path.join(OUT_DIR, "kubectl-agent.cjs");
export const COMPLETION_LINK = "kubectl_complete-agent";
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

const run = promisify(execFile);

/**
 * Optional native speed-ups and codecs that @kubernetes/client-node's dependencies require inside
 * try/catch (ws: bufferutil, utf-8-validate; node-fetch: encoding) and do without when absent.
 */
const OPTIONAL_REQUIRES = ["encoding", "bufferutil", "utf-8-validate"];

/**
 * Each optional module becomes one that throws when loaded, as a missing one would: its importer
 * catches that and carries on, and a SEA never tries (and warns about) loading it from disk.
 */
const absentOptionalModules: Plugin = {
  name: "absent-optional-modules",
  setup(b) {
    const filter = new RegExp(`^(${OPTIONAL_REQUIRES.join("|")})$`);
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "absent-optional" }));
    b.onLoad({ filter: /.*/, namespace: "absent-optional" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is not bundled into kubectl-agent`)});`,
      loader: "js",
    }));
  },
};

async function bundle(): Promise<Buffer> {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    write: false,
    metafile: true,
    logLevel: "silent",
    legalComments: "none",
    plugins: [absentOptionalModules],
    // @kubernetes/client-node is ESM and reads import.meta.url in code the plugin never runs.
    define: { "import.meta.url": "__kubectl_agent_import_meta_url" },
    banner: {
      js: 'const __kubectl_agent_import_meta_url = require("node:url").pathToFileURL(__filename).href;',
    },
  });
  const problems = [...bundleProblems(result.metafile), ...result.warnings.map((w) => w.text)];
  if (problems.length > 0) {
    throw new Error(`build:kubectl-agent: the bundle is not self-contained:\n  ${problems.join("\n  ")}`);
  }
  const out = result.outputFiles[0];
  if (!out) throw new Error("build:kubectl-agent: esbuild produced no output file");
  return Buffer.from(out.contents);
}

async function findStrip(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    try {
      await access(path.join(dir, "strip"), constants.X_OK);
      return path.join(dir, "strip");
    } catch {}
  }
  return undefined;
}

/**
 * Builds into `outDir` (dist/kubectl-agent by default; the plugin's e2e test builds into a
 * temporary directory) and returns the executable's path.
 */
export async function buildKubectlAgent(
  log: (line: string) => void = () => {},
  outDir: string = OUT_DIR,
): Promise<string> {
  await mkdir(outDir, { recursive: true });
  const code = await bundle();
  const work = await mkdtemp(path.join(outDir, ".build-"));
  try {
    const bundleFile = path.join(work, path.basename(BUNDLE));
    // The bundle alone is a working plugin for machines with Node (esbuild keeps main.ts's `#!`).
    await writeFile(bundleFile, code);
    await chmod(bundleFile, 0o755);
    const seaBundle = path.join(work, "sea-main.cjs");
    await writeFile(seaBundle, code);
    const blob = path.join(work, "sea-prep.blob");
    const config = path.join(work, "sea-config.json");
    await writeFile(
      config,
      JSON.stringify({
        main: seaBundle,
        output: blob,
        useCodeCache: true,
        disableExperimentalSEAWarning: true,
      }),
    );
    await run(process.execPath, ["--experimental-sea-config", config], { cwd: work });
    const exe = path.join(work, path.basename(EXECUTABLE));
    const strip = await findStrip();
    if (strip) await run(strip, ["-o", exe, process.execPath]);
    else await copyFile(process.execPath, exe);
    await chmod(exe, 0o755);
    const { inject } = createRequire(import.meta.url)("postject") as {
      inject: (file: string, name: string, data: Buffer, o: { sentinelFuse: string }) => Promise<void>;
    };
    // postject prints harmless ELF-note warnings on stdout; keep them out of the build's output.
    const write = process.stdout.write;
    const warn = console.warn;
    process.stdout.write = (() => true) as typeof process.stdout.write;
    console.warn = () => {};
    try {
      await inject(exe, "NODE_SEA_BLOB", await readFile(blob), { sentinelFuse: SEA_FUSE });
    } finally {
      process.stdout.write = write;
      console.warn = warn;
    }
    await link(exe, path.join(work, COMPLETION_LINK));
    for (const name of [path.basename(BUNDLE), path.basename(EXECUTABLE), COMPLETION_LINK]) {
      await rename(path.join(work, name), path.join(outDir, name));
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const executable = path.join(outDir, path.basename(EXECUTABLE));
  const bytes = (await stat(executable)).size;
  log(
    `build:kubectl-agent: wrote ${path.relative(ROOT, executable)} (${(bytes / 1e6).toFixed(1)} MB) and ${COMPLETION_LINK}`,
  );
  return executable;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildKubectlAgent(console.log).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  });
}
