/**
 * Confinement of init-written paths to the workspace (spec.files: docs/security.md#specfiles; docs/decisions.md D-30, D-31).
 *
 * Two checks: a pure lexical one (`..`, an absolute path elsewhere, the workspace itself) and one
 * against the filesystem, because a cloned repository can carry a symlink that points outside
 * the workspace: the real path of the deepest existing ancestor must still be inside it.
 */
import { lstat, realpath } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve } from "node:path";

export type Confined = { ok: true; path: string } | { ok: false; cause: string };

/** True when `path` lies strictly below `root` (both absolute and normalised). */
export function isStrictlyInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel);
}

/** True when `path` is `root` or below it. */
function isInsideOrRoot(root: string, path: string): boolean {
  return path === root || isStrictlyInside(root, path);
}

/**
 * The destination a declared path names: relative ⇒ under the workspace, absolute ⇒ as given;
 * normalised, and strictly below the workspace.
 */
export function lexicalDestination(workspace: string, declared: string): Confined {
  if (declared.trim() === "") return { ok: false, cause: "the path is empty" };
  if (declared.includes("\0")) return { ok: false, cause: "the path contains a NUL byte" };
  const root = resolve(workspace);
  const path = resolve(root, declared);
  if (path === root)
    return { ok: false, cause: `resolves to the workspace ${root} itself, not a path inside it` };
  if (!isStrictlyInside(root, path))
    return { ok: false, cause: `resolves to ${path}, outside the workspace ${root}` };
  return { ok: true, path };
}

/**
 * Why a declared `spec.files` path may not be written even inside the workspace, else undefined:
 * a last component that names a directory (a trailing `/`, `.` or `..`). A path inside a clone's
 * `.git` does not escape the workspace and is written like any other: the agent can write there
 * too, so whatever reads a clone's `.git` after the init (the courier) treats it as hostile
 * (docs/security.md#specfiles).
 */
export function fileShapeProblem(declared: string): string | undefined {
  const last = declared.split("/").at(-1) ?? "";
  if (last === "" || last === "." || last === "..")
    return "ends in a directory (/, . or ..), not a file name";
  return undefined;
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Undefined when the deepest existing ancestor of `path` (its parent directory or above) really
 * lies inside the workspace; else why not. A dangling symlink on the way counts as an escape: its
 * target cannot be verified and creating parents through it would write wherever it points.
 */
export async function realAncestorProblem(workspace: string, path: string): Promise<string | undefined> {
  let realRoot: string;
  try {
    realRoot = await realpath(workspace);
  } catch (err) {
    return `the workspace ${workspace} cannot be resolved (${errnoCode(err) ?? String(err)})`;
  }
  let ancestor = dirname(path);
  for (;;) {
    try {
      await lstat(ancestor);
      break;
    } catch (err) {
      if (errnoCode(err) !== "ENOENT" && errnoCode(err) !== "ENOTDIR") {
        return `${ancestor} cannot be inspected (${errnoCode(err) ?? String(err)})`;
      }
      const parent = dirname(ancestor);
      if (parent === ancestor) return `no ancestor of ${path} exists`;
      ancestor = parent;
    }
  }
  let real: string;
  try {
    real = await realpath(ancestor);
  } catch {
    return `${ancestor} is a dangling symlink`;
  }
  if (!isInsideOrRoot(realRoot, real)) {
    return `${ancestor} resolves through a symlink to ${real}, outside the workspace ${realRoot}`;
  }
  return undefined;
}

/** What is at the destination itself, without following a symlink there. */
export async function existingKind(
  path: string,
): Promise<"none" | "file" | "directory" | "symlink" | "other"> {
  try {
    const st = await lstat(path);
    if (st.isSymbolicLink()) return "symlink";
    if (st.isDirectory()) return "directory";
    if (st.isFile()) return "file";
    return "other";
  } catch (err) {
    if (errnoCode(err) === "ENOENT" || errnoCode(err) === "ENOTDIR") return "none";
    throw err;
  }
}
