/**
 * The Station images the run-pod tests give their `agent` containers on the real node
 * (docs/real-node.md), built with buildah into the project's image store (images.ts) from the Node
 * stand-in the Dockerfile's build uses:
 *
 * - FAKE_CLI_STATION_IMAGE: the fake CLIs (test/fakes/cli) as `claude`, `codex`, `gemini` and
 *   `opencode` in /usr/local/bin, for the scripted runs;
 * - REAL_CLI_STATION_IMAGE: the real pinned CLIs, from deploy/station-image/Dockerfile, the file
 *   docs/agent-clis.md shows platform teams, with all four pinned packages;
 * - NO_CLI_STATION_IMAGE: Node and npm only, plus a warm npm cache at /opt/npm-cache, so a run that
 *   installs its CLI can do it offline (pods here reach no registry).
 *
 * buildah's layer cache makes a rebuild of an unchanged image take about a second.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_CLIS, CLI_VENDORS } from "../../src/core/cli/agent-clis.js";
import { CLI_NAMES } from "../fakes/cli/fake-cli.js";
import { fakeCliProgram } from "../fakes/cli/install.js";
import { CONTAINER_NPM_CACHE, npmCacheRoot } from "./agent-clis.js";
import { REPO_ROOT } from "./cluster.js";
import { type BuiltImage, buildah, type ImagesManifest, nodeStandInImage, saveArchive } from "./images.js";

export const FAKE_CLI_STATION_IMAGE = "harness.test.example/station-fake-clis:local";
export const REAL_CLI_STATION_IMAGE = "harness.test.example/station-real-clis:local";
export const NO_CLI_STATION_IMAGE = "harness.test.example/station-no-cli:local";

export type StationImageKey = "fakeClis" | "realClis" | "noCli";

/** Builds (or finds in the layer cache) the Station images asked for. */
export async function buildStationImages(
  manifest: ImagesManifest,
  keys: StationImageKey[],
  log: (line: string) => void = () => {},
): Promise<Record<StationImageKey, BuiltImage | undefined>> {
  const built: Record<StationImageKey, BuiltImage | undefined> = {
    fakeClis: undefined,
    realClis: undefined,
    noCli: undefined,
  };
  for (const key of keys) {
    const started = Date.now();
    built[key] = await BUILDERS[key](manifest);
    log(
      `[images] Station image ${built[key]?.name} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return built;
}

const BUILDERS: Record<StationImageKey, (manifest: ImagesManifest) => Promise<BuiltImage>> = {
  fakeClis: (manifest) =>
    withContext(async (context) => {
      for (const cli of CLI_NAMES) await writeFile(join(context, cli), fakeCliProgram(), { mode: 0o755 });
      await writeFile(
        join(context, "Dockerfile"),
        [
          `FROM ${nodeStandInImage()}`,
          `COPY ${CLI_NAMES.join(" ")} /usr/local/bin/`,
          // The fakes start with #!/usr/bin/node; the Node image has node in /usr/local/bin only.
          "RUN ln -s /usr/local/bin/node /usr/bin/node",
          "",
        ].join("\n"),
      );
      return bud(manifest, FAKE_CLI_STATION_IMAGE, context, join(context, "Dockerfile"));
    }),
  realClis: (manifest) => {
    const packages = CLI_VENDORS.map((v) => `${AGENT_CLIS[v].package}@${AGENT_CLIS[v].version}`).join(" ");
    const dir = join(REPO_ROOT, "deploy/station-image");
    return bud(manifest, REAL_CLI_STATION_IMAGE, dir, join(dir, "Dockerfile"), [
      "--build-arg",
      `CLI_PACKAGES=${packages}`,
    ]);
  },
  noCli: (manifest) =>
    withContext(async (context) => {
      // The warm cache is the build context itself (only the Dockerfile lives elsewhere).
      await writeFile(
        join(context, "Dockerfile"),
        [`FROM ${nodeStandInImage()}`, `COPY --chown=1000:1000 . ${CONTAINER_NPM_CACHE}/`, ""].join("\n"),
      );
      return bud(manifest, NO_CLI_STATION_IMAGE, npmCacheRoot(), join(context, "Dockerfile"));
    }),
};

async function withContext<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "station-image-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function bud(
  manifest: ImagesManifest,
  name: string,
  context: string,
  dockerfile: string,
  extra: string[] = [],
): Promise<BuiltImage> {
  await buildah(manifest, [
    "bud",
    "--pull=never",
    "--network=host",
    "--layers",
    "--quiet",
    ...extra,
    "-t",
    name,
    "-f",
    dockerfile,
    context,
  ]);
  return saveArchive(manifest, name);
}
