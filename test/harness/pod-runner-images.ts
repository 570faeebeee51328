/**
 * The "images" of the pod runner. There is no image filesystem: the host's root filesystem stands
 * in for every image, except that each container gets an image bin dir mounted over
 * /usr/local/bin:
 *
 * - every image: the fake CLIs (`claude`, `codex`, `gemini`, `opencode`; test/fakes/cli);
 * - the run-pod image (`RUNNER_AGENT_IMAGE`, what the controller under test must get as
 *   AGENT_IMAGE): also `ai-agent-init`, `ai-agent-supervisor` and `ai-agent-courier`, symlinks to
 *   the executables `npm run build:agent` puts in dist/agent, and `ai-agent-init` as the image's
 *   entrypoint (used when the container sets no command, as the controller's init container).
 */
import { existsSync } from "node:fs";
import { chmod, link, mkdir, symlink } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_NAMES } from "../fakes/cli/fake-cli.js";
import { installFakeClis } from "../fakes/cli/install.js";
import type { ImageConfig } from "./pod-runner-process.js";

/** The image name the runner maps to the run-pod programs; start the controller with AGENT_IMAGE set to it. */
export const RUNNER_AGENT_IMAGE = "harness.test.example/ai-agent-init:local";
/** Where `npm run build:agent` writes the run-pod executables. */
export const AGENT_DIST_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../dist/agent");
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
    },
  };
}
