/**
 * The real agent CLIs for tests, `npm run dev` and the benchmark: each pinned CLI
 * (src/core/cli/agent-clis.ts) installed once with `npm install --prefix <dir> <package>@<version>`
 * into a cache outside the repo, like the control-plane binaries:
 *
 *   ${XDG_CACHE_HOME:-~/.cache}/ai-agent-subsystem/agent-clis/<package, / and @ → _>_<version>/
 *
 * A directory counts as installed when it holds the stamp file, or (a directory installed by hand
 * the same way) when its executable exists and the package's package.json names the pinned
 * version; the stamp is then written. An install goes to a private temporary directory that is
 * renamed into place, so two processes installing at once never see half a CLI: the loser of the
 * rename throws its copy away and uses the winner's.
 *
 * HARNESS_REAL_CLIS=0 never installs (tests that need the CLIs skip, naming that setting).
 *
 * Beside it, a warm npm cache (`…/ai-agent-subsystem/npm-cache`, ensureNpmCache) holds every
 * tarball of chosen CLIs, so a run pod whose image lacks the CLI can install it with
 * `npm_config_offline=true` from that cache, as from a registry mirror next door, without the
 * test depending on the network.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { chown, mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_CLIS, CLI_VENDORS, type CliVendor, cliPackageSpec } from "../../src/core/cli/agent-clis.js";

/** Written last into an install directory: its presence means the install is complete. */
export const STAMP_FILE = ".installed.json";
/** Where the cache directory is bind-mounted in the pod runner's real-CLI image. */
export const CONTAINER_CLI_ROOT = "/opt/agent-clis";
const INSTALL_TIMEOUT_MS = 15 * 60_000;

export interface CachedCli {
  vendor: CliVendor;
  package: string;
  version: string;
  binary: string;
  /** The install directory (`npm install --prefix` target). */
  dir: string;
  /** The executable on this host. */
  executable: string;
  /** The same executable as a container of the real-CLI image sees it (under CONTAINER_CLI_ROOT). */
  containerExecutable: string;
}

export interface AgentCliCache {
  /** The cache directory holding every install directory. */
  root: string;
  clis: Record<CliVendor, CachedCli>;
  /** A directory of symlinks `claude`, `codex`, `gemini`, `opencode` to the executables (host paths). */
  binDir: string;
}

/** `${XDG_CACHE_HOME:-~/.cache}/ai-agent-subsystem/agent-clis`. */
export function agentCliCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME?.trim() || join(homedir(), ".cache");
  return join(base, "ai-agent-subsystem", "agent-clis");
}

/** `${XDG_CACHE_HOME:-~/.cache}/ai-agent-subsystem/npm-cache`. */
export function npmCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(agentCliCacheRoot(env), "..", "npm-cache");
}
/** Where the pod runner's CLI-less image mounts the warm npm cache (read-write: npm writes to its cache). */
export const CONTAINER_NPM_CACHE = "/opt/npm-cache";
/** The run pods' agent user, who must be able to write the npm cache. */
const AGENT_UID = 1000;

/** `@anthropic-ai/claude-code`, `2.1.328` → `_anthropic-ai_claude-code_2.1.328`. */
export function installDirName(pkg: string, version: string): string {
  return `${pkg.replace(/[/@]/g, "_")}_${version}`;
}

export function cachedCli(vendor: CliVendor, root: string = agentCliCacheRoot()): CachedCli {
  const cli = AGENT_CLIS[vendor];
  const name = installDirName(cli.package, cli.version);
  const dir = join(root, name);
  return {
    vendor,
    package: cli.package,
    version: cli.version,
    binary: cli.binary,
    dir,
    executable: join(dir, "node_modules", ".bin", cli.binary),
    containerExecutable: join(CONTAINER_CLI_ROOT, name, "node_modules", ".bin", cli.binary),
  };
}

/** The version npm recorded for the package under `dir`, or undefined. */
function installedVersion(dir: string, pkg: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, "node_modules", pkg, "package.json"), "utf8"));
    return typeof manifest.version === "string" ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

/** Installed and stamped (no I/O beyond two file checks: cheap enough for test collection). */
export function isStamped(cli: CachedCli): boolean {
  return existsSync(join(cli.dir, STAMP_FILE)) && existsSync(cli.executable);
}

/** Installed by hand the same way, without a stamp: the executable and the pinned version are there. */
function isAdoptable(cli: CachedCli): boolean {
  return existsSync(cli.executable) && installedVersion(cli.dir, cli.package) === cli.version;
}

function stampContent(cli: CachedCli): string {
  return `${JSON.stringify({ package: cli.package, version: cli.version, at: new Date().toISOString() })}\n`;
}

/** Why the real CLIs cannot be used without installing them now, or undefined when every one is ready. */
export function agentClisMissing(root: string = agentCliCacheRoot()): string | undefined {
  if (process.env.HARNESS_REAL_CLIS === "0")
    return "HARNESS_REAL_CLIS=0: the real agent CLIs are not installed";
  const missing = CLI_VENDORS.map((v) => cachedCli(v, root)).filter((c) => !isStamped(c) && !isAdoptable(c));
  if (missing.length === 0) return undefined;
  return `not installed in ${root}: ${missing.map((c) => `${c.package}@${c.version}`).join(", ")}`;
}

interface NpmResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

function runNpm(npm: string, args: string[], cwd: string, timeoutMs: number): Promise<NpmResult> {
  return new Promise((resolve) => {
    const child = spawn(npm, args, {
      cwd,
      env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const keep = (c: Buffer) => {
      output = (output + c.toString("utf8")).slice(-64 * 1024);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => {
      output += `\ncannot run npm: ${err.message}`;
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

/** Installs one CLI into a temporary directory and renames it into place (see the module comment). */
async function install(cli: CachedCli, root: string, npm: string, log: (m: string) => void): Promise<void> {
  const spec = `${cli.package}@${cli.version}`;
  const tmp = join(
    root,
    `.tmp-${installDirName(cli.package, cli.version)}-${process.pid}-${randomBytes(3).toString("hex")}`,
  );
  await mkdir(tmp, { recursive: true });
  const started = Date.now();
  log(`installing ${spec} into ${cli.dir} (npm install; a minute or two on a cold npm cache)`);
  const ticker = setInterval(
    () => log(`  still installing ${spec} (${Math.round((Date.now() - started) / 1000)} s)`),
    30_000,
  );
  let result: NpmResult;
  try {
    result = await runNpm(
      npm,
      ["install", "--no-audit", "--no-fund", "--prefix", tmp, spec],
      tmp,
      INSTALL_TIMEOUT_MS,
    );
  } finally {
    clearInterval(ticker);
  }
  await writeFile(join(tmp, "install.log"), `${result.output}\nrc=${result.code ?? result.signal}\n`);
  const probe = { ...cli, dir: tmp, executable: join(tmp, "node_modules", ".bin", cli.binary) };
  if (result.code !== 0 || !existsSync(probe.executable)) {
    const failedLog = join(root, `${installDirName(cli.package, cli.version)}.failed.log`);
    await writeFile(failedLog, result.output);
    await rm(tmp, { recursive: true, force: true });
    const why =
      result.code !== 0
        ? `npm exited with ${result.signal ? `signal ${result.signal}` : `code ${result.code}`}`
        : `npm succeeded but ${cli.binary} is not in node_modules/.bin`;
    const tail = result.output.trim().split("\n").slice(-5).join("\n");
    throw new Error(`installing ${spec} failed: ${why}; npm output (${failedLog}) ends:\n${tail}`);
  }
  await writeFile(join(tmp, STAMP_FILE), stampContent(cli));
  try {
    await rename(tmp, cli.dir);
    log(`installed ${spec} in ${Math.round((Date.now() - started) / 1000)} s`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw err;
    // Another process finished the same install first: use its copy.
    await rm(tmp, { recursive: true, force: true });
    if (!isStamped(cli))
      throw new Error(`${cli.dir} appeared during the install but is not a complete install`);
  }
}

/** Makes `cli` usable: adopts an unstamped install by hand, moves a broken one aside, installs. */
async function ensureOne(cli: CachedCli, root: string, npm: string, log: (m: string) => void): Promise<void> {
  if (isStamped(cli)) return;
  if (isAdoptable(cli)) {
    await writeFile(join(cli.dir, STAMP_FILE), stampContent(cli));
    return;
  }
  if (existsSync(cli.dir)) {
    // Left by an install that died: out of the way first (renamed, so a racing process cannot trip on it).
    const aside = `${cli.dir}.broken-${process.pid}-${randomBytes(3).toString("hex")}`;
    await rename(cli.dir, aside).catch(() => undefined);
    await rm(aside, { recursive: true, force: true });
  }
  await install(cli, root, npm, log);
}

/** The symlink dir for the current pins: one per set of versions, so two checkouts never fight over it. */
async function ensureBinDir(root: string, clis: CachedCli[]): Promise<string> {
  const key = createHash("sha256")
    .update(clis.map((c) => `${c.package}@${c.version}`).join(","))
    .digest("hex")
    .slice(0, 10);
  const binDir = join(root, `bin-${key}`);
  await mkdir(binDir, { recursive: true });
  for (const cli of clis) {
    const link = join(binDir, cli.binary);
    if (existsSync(link)) continue;
    const tmp = `${link}.${process.pid}-${randomBytes(3).toString("hex")}`;
    await symlink(cli.executable, tmp);
    await rename(tmp, link);
  }
  return binDir;
}

/**
 * Every pinned CLI, installed into the cache on first use (progress on `log`). Throws naming the
 * package and npm's last words when an install fails, or when HARNESS_REAL_CLIS=0.
 */
export async function ensureAgentClis(
  options: {
    log?: (m: string) => void;
    root?: string;
    /** The npm executable (tests pass a stand-in). */
    npm?: string;
  } = {},
): Promise<AgentCliCache> {
  if (process.env.HARNESS_REAL_CLIS === "0")
    throw new Error("HARNESS_REAL_CLIS=0: the real agent CLIs are not installed");
  const root = options.root ?? agentCliCacheRoot();
  const log = options.log ?? ((m: string) => process.stderr.write(`[agent-clis] ${m}\n`));
  await mkdir(root, { recursive: true });
  const clis = CLI_VENDORS.map((v) => cachedCli(v, root));
  // One at a time: npm installs in parallel compete for the same two cores and the same cache.
  for (const cli of clis) await ensureOne(cli, root, options.npm ?? "npm", log);
  const binDir = await ensureBinDir(root, clis);
  return {
    root,
    binDir,
    clis: Object.fromEntries(clis.map((c) => [c.vendor, c])) as Record<CliVendor, CachedCli>,
  };
}

/** The cache as it is now, without installing: undefined when a CLI is missing. */
export async function installedAgentClis(
  root: string = agentCliCacheRoot(),
): Promise<AgentCliCache | undefined> {
  if (agentClisMissing(root) !== undefined) return undefined;
  return ensureAgentClis({ root, log: () => {} });
}

function warmStamp(cache: string, vendor: CliVendor): string {
  const cli = AGENT_CLIS[vendor];
  return join(cache, ".warmed", installDirName(cli.package, cli.version));
}

/** The CLIs whose every tarball is in the npm cache (for a test to skip on), or why not. */
export function npmCacheMissing(
  vendors: readonly CliVendor[],
  cache: string = npmCacheRoot(),
): string | undefined {
  if (process.env.HARNESS_REAL_CLIS === "0") return "HARNESS_REAL_CLIS=0: the npm cache is not warmed";
  const missing = vendors.filter((v) => !existsSync(warmStamp(cache, v)));
  if (missing.length === 0) return undefined;
  return `not in the npm cache ${cache}: ${missing.map((v) => `${AGENT_CLIS[v].package}@${AGENT_CLIS[v].version}`).join(", ")}`;
}

/** Hands the cache to the agent user, so a run pod's npm can use it (npm refuses a cache it cannot write). */
async function chownTree(path: string, uid: number): Promise<void> {
  await chown(path, uid, uid);
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) await chownTree(child, uid);
    else await chown(child, uid, uid).catch(() => undefined);
  }
}

/**
 * Fills the npm cache with every tarball `npm install <package>@<version>` needs for each vendor
 * (an install into a throwaway prefix: `npm cache add` would miss the platform packages the CLIs
 * pull in as optional dependencies). Idempotent (a stamp per CLI); concurrent runs are safe
 * (npm's cache is content-addressed and written atomically). Returns the cache directory.
 */
export async function ensureNpmCache(
  vendors: readonly CliVendor[],
  options: { log?: (m: string) => void; cache?: string; npm?: string } = {},
): Promise<string> {
  if (process.env.HARNESS_REAL_CLIS === "0")
    throw new Error("HARNESS_REAL_CLIS=0: the npm cache is not warmed");
  const cache = options.cache ?? npmCacheRoot();
  const log = options.log ?? ((m: string) => process.stderr.write(`[agent-clis] ${m}\n`));
  await mkdir(join(cache, ".warmed"), { recursive: true });
  let changed = false;
  for (const vendor of vendors) {
    if (existsSync(warmStamp(cache, vendor))) continue;
    const spec = cliPackageSpec(vendor);
    const prefix = await mkdtemp(join(tmpdir(), "npm-cache-warm-"));
    log(`warming the npm cache ${cache} with ${spec}`);
    const started = Date.now();
    try {
      const result = await runNpm(
        options.npm ?? "npm",
        ["install", "--no-audit", "--no-fund", "--prefix", prefix, "--cache", cache, spec],
        prefix,
        INSTALL_TIMEOUT_MS,
      );
      if (result.code !== 0) {
        const tail = result.output.trim().split("\n").slice(-5).join("\n");
        throw new Error(
          `warming the npm cache with ${spec} failed: npm exited with code ${result.code}:\n${tail}`,
        );
      }
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
    await writeFile(warmStamp(cache, vendor), `${new Date().toISOString()}\n`);
    log(`  ${spec} cached in ${Math.round((Date.now() - started) / 1000)} s`);
    changed = true;
  }
  if ((changed || !ownedBy(cache, AGENT_UID)) && process.getuid?.() === 0) await chownTree(cache, AGENT_UID);
  return cache;
}

/** Hands the npm cache back to the run pods' user after this (root) process's npm wrote to it. */
export async function giveNpmCacheToAgentUser(cache: string = npmCacheRoot()): Promise<void> {
  if (process.getuid?.() === 0 && existsSync(cache)) await chownTree(cache, AGENT_UID);
}

function ownedBy(path: string, uid: number): boolean {
  try {
    return statSync(path).uid === uid;
  } catch {
    return false;
  }
}
