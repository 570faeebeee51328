/**
 * The project's images built for real (`npm run build:images`, scripts/images/build.sh, docs/images.md):
 * the agent image and the controller image from the Dockerfile, and the real node's pause image,
 * in buildah's store in the machine's image cache. Tests build them (seconds once cached), read
 * what they hold, and hand their docker archives to the real node (real-node/).
 */
import { execFile, spawn } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, rmSync } from "node:fs";
import { rename } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "./cluster.js";

const run = promisify(execFile);

export type ImageKey = "agent" | "controller" | "pause";

export interface BuiltImage {
  /** The name it is tagged with, e.g. ghcr.io/re-cinq/ai-agent-run-pod:v0.1.0. */
  name: string;
  /** buildah's image id (the config digest's hex). */
  id: string;
  /** A docker archive of it, for `ctr images import`. */
  archive: string;
}

/** .cache/images.json, written by scripts/images/build.sh for this checkout. */
export interface ImagesManifest extends Partial<Record<ImageKey, BuiltImage>> {
  store: { root: string; runroot: string };
}

/** "" when this machine can build the images, else why not (the tests that need them skip with it). */
export function imagesProblem(): string {
  if (process.getuid?.() !== 0) return "building images needs root (buildah's store, debootstrap)";
  const missing = ["buildah", "debootstrap"].filter((tool) => !onPath(tool));
  if (missing.length > 0)
    return `${missing.join(" and ")} not installed (Debian packages; scripts/ensure-deps.sh installs them as root)`;
  return "";
}

/** True when an executable of that name is on PATH (or in /usr/sbin, /sbin, where root's tools live). */
export function onPath(tool: string): boolean {
  const dirs = (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/sbin"]);
  return dirs.some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs scripts/images/build.sh for the given images (default all) and returns the manifest. */
export async function buildImages(
  keys: ImageKey[] = [],
  log: (line: string) => void = () => {},
): Promise<ImagesManifest> {
  const script = join(REPO_ROOT, "scripts/images/build.sh");
  const manifestPath = await new Promise<string>((resolve, reject) => {
    const child = spawn("bash", [script, ...keys], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err = (err + c.toString()).slice(-8000);
      for (const line of c.toString().split("\n")) if (line.startsWith("[images]")) log(line);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const path = out.trim().split("\n").at(-1) ?? "";
      if (code === 0 && path) resolve(path);
      else reject(new Error(`${script} failed (exit ${code}):\n${err}`));
    });
  });
  return JSON.parse(readFileSync(manifestPath, "utf8")) as ImagesManifest;
}

/**
 * Paths buildah 1.28 creates whatever its --root/--runroot say (scripts/images/build.sh removes the
 * same ones): those absent when this module loaded are removed after each call, so reading an image
 * leaves the machine as it was.
 */
const BUILDAH_OWN_PATHS = ["/var/lib/containers", "/run/containers", "/run/runc", "/etc/cni"];
const absentAtLoad = BUILDAH_OWN_PATHS.filter((p) => !existsSync(p));

/** buildah against the project's image store. */
export async function buildah(manifest: ImagesManifest, args: string[]): Promise<string> {
  try {
    return await buildahCall(manifest, args);
  } finally {
    for (const p of absentAtLoad) rmSync(p, { recursive: true, force: true });
  }
}

async function buildahCall(manifest: ImagesManifest, args: string[]): Promise<string> {
  const { stdout } = await run(
    "buildah",
    [
      "--root",
      manifest.store.root,
      "--runroot",
      manifest.store.runroot,
      "--storage-driver",
      "overlay",
      ...args,
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

/** The image's docker-format config (Entrypoint, User, Healthcheck, Env, WorkingDir). */
export interface ImageConfig {
  User?: string;
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  Env?: string[];
  WorkingDir?: string;
  ExposedPorts?: Record<string, unknown>;
  Healthcheck?: {
    Test?: string[];
    Interval?: number;
    Timeout?: number;
    StartPeriod?: number;
    Retries?: number;
  };
  Labels?: Record<string, string>;
}

export async function imageConfig(manifest: ImagesManifest, name: string): Promise<ImageConfig> {
  const inspect = JSON.parse(await buildah(manifest, ["inspect", "--type", "image", name])) as {
    Docker?: { config?: ImageConfig };
  };
  return inspect.Docker?.config ?? {};
}

/** Calls fn with the image's root filesystem mounted read-write in a throwaway container. */
export async function withImageRoot<T>(
  manifest: ImagesManifest,
  name: string,
  fn: (root: string) => Promise<T>,
): Promise<T> {
  const container = (await buildah(manifest, ["from", "--pull=never", "--quiet", name])).trim();
  try {
    const root = (await buildah(manifest, ["mount", container])).trim();
    return await fn(root);
  } finally {
    await buildah(manifest, ["rm", container]).catch(() => {});
  }
}

/** The Node stand-in's name, as the Dockerfile's `FROM node:${NODE_VERSION}-bookworm-slim` resolves. */
export function nodeStandInImage(): string {
  const version = /^ARG NODE_VERSION=(\S+)$/m.exec(readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8"))?.[1];
  if (version === undefined) throw new Error("the Dockerfile has no ARG NODE_VERSION default");
  return `docker.io/library/node:${version}-bookworm-slim`;
}

/** The Debian stand-in's name (`FROM debian:${DEBIAN_VERSION}`): a shell image for test sidecars. */
export function debianStandInImage(): string {
  const version = /^ARG DEBIAN_VERSION=(\S+)$/m.exec(
    readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8"),
  )?.[1];
  if (version === undefined) throw new Error("the Dockerfile has no ARG DEBIAN_VERSION default");
  return `docker.io/library/debian:${version}`;
}

/**
 * A built image of the store as a docker archive named by its id, beside the archives
 * scripts/images/build.sh writes (once per id), for the real node's `ctr images import`.
 */
export async function saveArchive(manifest: ImagesManifest, name: string): Promise<BuiltImage> {
  const id = (
    await buildah(manifest, ["inspect", "--type", "image", "--format", "{{.FromImageID}}", name])
  ).trim();
  const dir = dirname(manifest.agent?.archive ?? manifest.pause?.archive ?? "");
  if (dir === ".")
    throw new Error("the images manifest names no archive (run scripts/images/build.sh first)");
  const archive = join(dir, `${id}.tar`);
  if (!existsSync(archive)) {
    await buildah(manifest, ["push", "--quiet", name, `docker-archive:${archive}.tmp:${name}`]);
    await rename(`${archive}.tmp`, archive);
  }
  return { name, id, archive };
}
