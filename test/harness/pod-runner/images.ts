/**
 * The "images" of the pod runner. There is no image filesystem: the host's root filesystem stands
 * in for every image, except that each container gets an image bin dir mounted over
 * /usr/local/bin:
 *
 * - every image: the fake CLIs (`claude`, `codex`, `gemini`, `opencode`; test/fakes/cli);
 * - the run-pod image (`RUNNER_AGENT_IMAGE`, what the controller under test must get as
 *   AGENT_IMAGE): also `ai-agent-init`, `ai-agent-supervisor` and `ai-agent-courier`, symlinks to
 *   the executables `npm run build:agent` puts in dist/agent, and `ai-agent-init` as the image's
 *   entrypoint (used when the container sets no command, as the controller's init container);
 * - the real-CLI image (`REAL_CLI_AGENT_IMAGE`, for a Station's `agent` container): the REAL pinned
 *   CLIs instead of the fakes, as a Station image with them preinstalled, plus the run-pod programs.
 *   The CLI cache (test/harness/agent-clis.ts) lives under /root, which uid 1000 cannot enter, so it
 *   is bind-mounted read-only at /opt/agent-clis and the bin dir's symlinks point there. When the
 *   cache is not installed at plane start the image's containers wait with CreateContainerError
 *   saying why (never silently running the fakes);
 * - the CLI-less image (`NO_CLI_AGENT_IMAGE`): an empty /usr/local/bin, a Station image with Node
 *   and npm (/usr/bin) but no agent CLI, so the run installs one; the warm npm cache is mounted
 *   read-write at /opt/npm-cache (`npm_config_cache` + `npm_config_offline=true` in the run's env
 *   install from it without the network).
 */
import { existsSync } from "node:fs";
import { chmod, link, mkdir, symlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_VENDORS } from "../../../src/core/cli/agent-clis.js";
import { CLI_NAMES } from "../../fakes/cli/fake-cli.js";
import { installFakeClis } from "../../fakes/cli/install.js";
import {
  agentCliCacheRoot,
  agentClisMissing,
  CONTAINER_CLI_ROOT,
  CONTAINER_NPM_CACHE,
  cachedCli,
  npmCacheRoot,
} from "../agent-clis.js";
import type { ImageConfig } from "./process.js";

/** The image name the runner maps to the run-pod programs; start the controller with AGENT_IMAGE set to it. */
export const RUNNER_AGENT_IMAGE = "harness.test.example/ai-agent-init:local";
/** A Station image with the real pinned CLIs on PATH (/usr/local/bin); give it to a Station's agent container. */
export const REAL_CLI_AGENT_IMAGE = "harness.test.example/agent-real-clis:local";
/** A Station image without any agent CLI (Node and npm in /usr/bin only). */
export const NO_CLI_AGENT_IMAGE = "harness.test.example/agent-no-cli:local";
/** Where `npm run build:agent` writes the run-pod executables. */
export const AGENT_DIST_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../dist/agent");
export const RUN_POD_PROGRAMS = ["ai-agent-init", "ai-agent-supervisor", "ai-agent-courier"] as const;

/** True once dist/agent holds every run-pod program (the e2e tests need them). */
export function runPodProgramsBuilt(): boolean {
  return RUN_POD_PROGRAMS.every((p) => existsSync(join(AGENT_DIST_DIR, p)));
}

export interface RunnerImages {
  images: Record<string, ImageConfig>;
  defaultBinDir: string;
}

/** Creates the image bin dirs under `dir` (world-readable: containers run as other users). */
export async function prepareRunnerImages(dir: string): Promise<RunnerImages> {
  const defaultBinDir = join(dir, "default");
  const agentBinDir = join(dir, "agent");
  for (const d of [dir, defaultBinDir, agentBinDir]) {
    await mkdir(d, { recursive: true });
    await chmod(d, 0o755);
  }
  await installFakeClis(defaultBinDir);
  for (const name of CLI_NAMES) await link(join(defaultBinDir, name), join(agentBinDir, name));
  // Symlinks, so a dist/agent built after the plane started is picked up too.
  for (const name of RUN_POD_PROGRAMS) await symlink(join(AGENT_DIST_DIR, name), join(agentBinDir, name));
  return {
    defaultBinDir,
    images: {
      [RUNNER_AGENT_IMAGE]: { entrypoint: ["/usr/local/bin/ai-agent-init"], binDir: agentBinDir },
      [REAL_CLI_AGENT_IMAGE]: await prepareRealCliImage(join(dir, "real-clis")),
      [NO_CLI_AGENT_IMAGE]: {
        binDir: await emptyDir(join(dir, "no-cli")),
        // The warm npm cache (agent-clis.ts), for runs that install their CLI offline from it.
        mounts: [{ source: await ensureDir(npmCacheRoot()), target: CONTAINER_NPM_CACHE, readOnly: false }],
      },
    },
  };
}

async function ensureDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  return path;
}

async function emptyDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  await chmod(path, 0o755);
  return path;
}

async function prepareRealCliImage(binDir: string): Promise<ImageConfig> {
  await emptyDir(binDir);
  const root = agentCliCacheRoot();
  for (const vendor of CLI_VENDORS) {
    const cli = cachedCli(vendor, root);
    await symlink(cli.containerExecutable, join(binDir, cli.binary));
  }
  for (const name of RUN_POD_PROGRAMS) await symlink(join(AGENT_DIST_DIR, name), join(binDir, name));
  const missing = agentClisMissing(root);
  return {
    binDir,
    mounts: [{ source: root, target: CONTAINER_CLI_ROOT, readOnly: true }],
    ...(missing !== undefined ? { unavailable: `the real agent CLIs are missing (${missing})` } : {}),
  };
}
