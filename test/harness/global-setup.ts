/**
 * Vitest globalSetup of the `integration` project: installs the real agent CLIs into their cache
 * on first use (agent-clis.ts; before the plane starts, whose real-CLI image needs them), starts
 * ONE control plane for the whole run, with the machine's real node when it can run one (run pods
 * run there, from images built from the Dockerfile and the Station images of station-images.ts;
 * docs/real-node.md), installs deploy/crds/*.yaml, and provides the kubeconfig and state-file
 * paths to the tests (read them through test/harness/context.ts).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { ensureAgentClis, ensureNpmCache } from "./agent-clis.js";
import { type ControlPlane, installCrds, REPO_ROOT, startControlPlane } from "./cluster.js";
import { buildImages, debianStandInImage, saveArchive } from "./images.js";
import { realNodeProblem } from "./real-node/index.js";
import { buildStationImages } from "./station-images.js";

declare module "vitest" {
  export interface ProvidedContext {
    kubeconfigPath: string;
    controlPlaneStateFile: string;
    installedCrds: string[];
    /** "" when the real agent CLIs are installed, else why not. */
    agentClisProblem: string;
    /** "" when the plane has a real node (run pods run there), else why not. */
    realNodeProblem: string;
  }
}

export function projectCrdFiles(): string[] {
  const dir = join(REPO_ROOT, "deploy/crds");
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith(".yaml") || f.endsWith(".yml"))
      .sort()
      .map((f) => join(dir, f));
  } catch {
    return [];
  }
}

let plane: ControlPlane | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (m: string) => process.stderr.write(`[control-plane] ${m}\n`);
  const cliLog = (m: string) => process.stderr.write(`[agent-clis] ${m}\n`);
  const agentClisProblem = await ensureAgentClis({ log: cliLog }).then(
    () => "",
    (err: Error) => {
      process.stderr.write(`[agent-clis] the real-CLI tests will be skipped: ${err.message}\n`);
      return err.message;
    },
  );
  // The installer e2e test installs claude offline from the warm npm cache (it skips without it).
  if (agentClisProblem === "") {
    await ensureNpmCache(["claude"], { log: cliLog }).catch((err: Error) =>
      process.stderr.write(`[agent-clis] the npm-install test will be skipped: ${err.message}\n`),
    );
  }
  project.provide("agentClisProblem", agentClisProblem);
  // Run pods need the real node; without one (no root, a missing package) their tests skip with
  // this reason, printed once here.
  const nodeProblem = realNodeProblem();
  if (nodeProblem !== "") log(`no real node, the run-pod tests will be skipped: ${nodeProblem}`);
  plane = await startControlPlane({
    log,
    ...(nodeProblem === "" ? { realNode: { images: ["agent"] } } : {}),
  });
  project.provide("realNodeProblem", nodeProblem);
  try {
    if (plane.realNode) {
      const manifest = await buildImages(["agent"], log);
      const stations = await buildStationImages(
        manifest,
        agentClisProblem === "" ? ["fakeClis", "realClis", "noCli"] : ["fakeClis"],
        log,
      );
      // The Debian stand-in is the shell image of the tests' sidecars (debianStandInImage()).
      const shell = await saveArchive(manifest, debianStandInImage());
      for (const image of [...Object.values(stations), shell])
        if (image) await plane.realNode.importImage(image, log);
    }
    const crds = await installCrds(plane.api(), projectCrdFiles());
    project.provide("kubeconfigPath", plane.kubeconfig);
    project.provide("controlPlaneStateFile", plane.stateFile);
    project.provide("installedCrds", crds);
  } catch (err) {
    await plane.stop();
    throw err;
  }
  return async () => {
    await plane?.stop();
    plane = undefined;
  };
}
