/**
 * `npm run build:agent`: the run-pod programs as one self-contained executable (docs/decisions.md D-25), so a Station
 * image needs only glibc: src/run-pod/main.ts bundled by esbuild into one CommonJS file (a Node 20
 * single executable application runs only CommonJS and can require only built-in modules), turned
 * into a SEA blob by the Node that runs this script, and injected with postject into a copy of that
 * Node. Writes dist/agent/ai-agent and the hard links ai-agent-init, ai-agent-supervisor and
 * ai-agent-courier (docs/run-pod.md, "Packaging").
 *
 * Idempotent: the bundle is always rebuilt (well under a second), the executable only when the
 * bundle, the Node binary or this script changed (a fingerprint in dist/agent/.fingerprint).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { constants, existsSync, readFileSync } from "node:fs";
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
  utimes,
  writeFile,
} from "node:fs/promises";
import { builtinModules, createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build, type Message, type Metafile } from "esbuild";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRY = path.join(ROOT, "src", "run-pod", "main.ts");
export const OUT_DIR = path.join(ROOT, "dist", "agent");
export const EXECUTABLE = path.join(OUT_DIR, "ai-agent");
/** The names the executable answers to (src/run-pod/dispatch.ts), as hard links of it. */
export const LINK_NAMES = ["ai-agent-init", "ai-agent-supervisor", "ai-agent-courier"] as const;
/** The bundle the executable embeds, kept beside it. */
export const BUNDLE = path.join(OUT_DIR, "ai-agent.cjs");
const FINGERPRINT = path.join(OUT_DIR, ".fingerprint");
// The sentinel Node's SEA loader looks for (documented in Node's single-executable-applications page).
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

const run = promisify(execFile);

export interface BuildResult {
  /** False when the executable was already up to date. */
  rebuilt: boolean;
  executable: string;
  bytes: number;
}

export async function buildAgent(log: (line: string) => void = () => {}): Promise<BuildResult> {
  await mkdir(OUT_DIR, { recursive: true });
  const bundle = await bundleEntry();
  const strip = await findStrip();
  const fingerprint = createHash("sha256")
    .update(bundle)
    .update(process.version)
    .update(process.execPath)
    .update(strip ?? "")
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex");
  if (await upToDate(fingerprint)) {
    // Newer than its inputs again, so mtime checks (scripts/ensure-deps.sh) skip the next build.
    const now = new Date();
    await utimes(EXECUTABLE, now, now);
    log(`build:agent: ${path.relative(ROOT, EXECUTABLE)} is up to date`);
    return { rebuilt: false, executable: EXECUTABLE, bytes: (await stat(EXECUTABLE)).size };
  }
  await rm(FINGERPRINT, { force: true });
  // Everything is made in a private directory and renamed into place: a concurrent build cannot
  // mix files with this one, and a program running the old executable never sees a missing name.
  const work = await mkdtemp(path.join(OUT_DIR, ".build-"));
  try {
    const bundleFile = path.join(work, path.basename(BUNDLE));
    await writeFile(bundleFile, bundle);
    const blob = await seaBlob(work, bundleFile);
    const exe = path.join(work, path.basename(EXECUTABLE));
    await copyNode(exe, strip);
    await chmod(exe, 0o755);
    await injectBlob(exe, blob);
    for (const name of LINK_NAMES) await link(exe, path.join(work, name));
    for (const name of [path.basename(BUNDLE), path.basename(EXECUTABLE), ...LINK_NAMES]) {
      await rename(path.join(work, name), path.join(OUT_DIR, name));
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  await writeFile(FINGERPRINT, `${fingerprint}\n`);
  const bytes = (await stat(EXECUTABLE)).size;
  log(
    `build:agent: wrote ${path.relative(ROOT, EXECUTABLE)} (${(bytes / 1e6).toFixed(1)} MB, Node ${process.version}${strip ? ", stripped" : ""}) and links ${LINK_NAMES.join(", ")}`,
  );
  return { rebuilt: true, executable: EXECUTABLE, bytes };
}

/** The bundle's text; fails when anything would be loaded from outside it at run time. */
async function bundleEntry(): Promise<Buffer> {
  const result = await build({
    entryPoints: [ENTRY],
    // Paths in the bundle's comments are relative to this: the same bundle from any directory.
    absWorkingDir: ROOT,
    // ...and from a checkout whose node_modules is a symlink (a git worktree sharing another's):
    // resolved, its paths would name the real directory, and the image build's bundle would differ.
    preserveSymlinks: true,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    outfile: BUNDLE,
    write: false,
    metafile: true,
    logLevel: "silent",
    legalComments: "none",
  });
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error("build:agent: esbuild produced no output file");
  const problems = [
    ...bundleProblems(result.metafile),
    ...dynamicRequires(output.text),
    ...result.warnings.map(formatMessage),
  ];
  if (problems.length > 0) {
    throw new Error(
      `build:agent: the bundle of ${path.relative(ROOT, ENTRY)} is not self-contained:\n  ${problems.join("\n  ")}`,
    );
  }
  return Buffer.from(output.contents);
}

/**
 * What a SEA cannot load: imports left outside the bundle (only Node's built-ins are available to
 * a single executable's require) and native addons (.node files are not bundled into the blob).
 */
export function bundleProblems(metafile: Metafile): string[] {
  const builtins = new Set(builtinModules);
  const problems: string[] = [];
  for (const input of Object.keys(metafile.inputs)) {
    if (input.endsWith(".node")) problems.push(`native addon ${input}`);
  }
  for (const output of Object.values(metafile.outputs)) {
    for (const imp of output.imports) {
      // A `node:` specifier can only name a built-in, possibly one newer than Node 20 (undici
      // probes node:sqlite lazily and copes with its absence).
      const builtin = imp.path.startsWith("node:") || builtins.has(imp.path);
      if (imp.external && !builtin) problems.push(`${imp.kind} of ${imp.path} stays outside the bundle`);
    }
  }
  return problems;
}

/**
 * `require(<expression>)` calls left in the bundle: esbuild cannot follow them (and does not warn
 * about them inside node_modules), so at run time they would look for files that are not there.
 */
export function dynamicRequires(bundle: string): string[] {
  return [...bundle.matchAll(/\b(?:__)?require\((?!\s*["'`)])([^)]{0,60})/g)].map(
    (m) => `dynamic require(${m[1]}…) cannot be bundled`,
  );
}

function formatMessage(message: Message): string {
  const where = message.location ? `${message.location.file}:${message.location.line}: ` : "";
  return `${where}${message.text}`;
}

async function upToDate(fingerprint: string): Promise<boolean> {
  if (!existsSync(FINGERPRINT) || (await readFile(FINGERPRINT, "utf8")).trim() !== fingerprint) return false;
  try {
    const exe = await stat(EXECUTABLE);
    for (const name of LINK_NAMES) {
      if ((await stat(path.join(OUT_DIR, name))).ino !== exe.ino) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** The SEA preparation blob, made by the Node that will run it (blobs are tied to a Node version). */
async function seaBlob(work: string, bundleFile: string): Promise<Buffer> {
  const config = path.join(work, "sea-config.json");
  const blob = path.join(work, "sea-prep.blob");
  await writeFile(
    config,
    `${JSON.stringify(
      {
        main: bundleFile,
        output: blob,
        // V8's compiled code ships in the blob: a cold start skips compiling the bundle.
        useCodeCache: true,
        disableExperimentalSEAWarning: true,
      },
      null,
      2,
    )}\n`,
  );
  try {
    await run(process.execPath, ["--experimental-sea-config", config], { cwd: work });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(
      `build:agent: ${process.execPath} --experimental-sea-config failed: ${stderr || String(err)}`,
    );
  }
  return readFile(blob);
}

/**
 * `strip` when installed (binutils): the Node binary's symbol table and debug info are not needed to
 * run it; dropping them makes the executable ~13% smaller (every run pod copies it) and postject faster.
 */
async function findStrip(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, "strip");
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

async function copyNode(target: string, strip: string | undefined): Promise<void> {
  if (strip === undefined) {
    await copyFile(process.execPath, target);
    return;
  }
  try {
    await run(strip, ["-o", target, process.execPath]);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(
      `build:agent: ${strip} -o ${target} ${process.execPath} failed: ${stderr || String(err)}`,
    );
  }
}

type Inject = (
  file: string,
  resource: string,
  data: Buffer,
  options: { sentinelFuse: string },
) => Promise<void>;

async function injectBlob(file: string, blob: Buffer): Promise<void> {
  // postject ships no type declarations; its API is this one function.
  const { inject } = createRequire(import.meta.url)("postject") as { inject: Inject };
  // postject reports "Can't find string offset for section name" for Node's many ELF notes on
  // stdout; harmless, so it is kept out of the build's output.
  const write = process.stdout.write;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  const warn = console.warn;
  console.warn = () => {};
  try {
    await inject(file, "NODE_SEA_BLOB", blob, { sentinelFuse: SEA_FUSE });
  } finally {
    process.stdout.write = write;
    console.warn = warn;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  buildAgent((line) => console.log(`${line} in ${((Date.now() - started) / 1000).toFixed(1)} s`)).catch(
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exitCode = 1;
    },
  );
}
