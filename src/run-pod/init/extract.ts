/**
 * Safe extraction of a tar.gz (conversation archives, skills) into a root directory: the archive
 * is listed first and refused as a whole when any entry would land outside the root (an absolute
 * or `..` path, a link whose target leaves the root, a device or FIFO). Only then is it extracted,
 * with node-tar's own guards (no writing through symlinks) as a second line. An extraction that
 * fails part-way (such a guard, a damaged archive) removes what it had written, and its error keeps
 * node-tar's message, not just its code.
 */
import { lstatSync } from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, posix, resolve } from "node:path";
import { extract, list } from "tar";

export interface ArchiveEntry {
  path: string;
  type: string;
  linkpath?: string;
}

const PLAIN_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory", "GNUDumpDir"]);
/** Entry types that carry metadata only and are never written. */
const META_TYPES = new Set([
  "ExtendedHeader",
  "GlobalExtendedHeader",
  "NextFileHasLongPath",
  "NextFileHasLongLinkpath",
  "OldExtendedHeader",
]);

function escapes(relativePath: string): boolean {
  const normal = posix.normalize(relativePath);
  return normal === ".." || normal.startsWith("../");
}

/** True when the relative path `p` is `dir` or inside it. */
function inside(p: string, dir: string): boolean {
  const normal = posix.normalize(p).replace(/\/+$/, "");
  return normal === dir || normal.startsWith(`${dir}/`);
}

/**
 * Why an entry would escape the extraction root, or, with `within` (a directory relative to the
 * root), land outside that directory; else undefined.
 */
export function entryProblem(entry: ArchiveEntry, within?: string): string | undefined {
  if (META_TYPES.has(entry.type)) return undefined;
  if (posix.isAbsolute(entry.path) || /^[A-Za-z]:/.test(entry.path)) return "is an absolute path";
  if (entry.path.split("/").includes("..")) return "contains a '..' component";
  if (within !== undefined && !inside(entry.path, within)) return `is outside ${within}`;
  if (PLAIN_TYPES.has(entry.type)) return undefined;
  const link = entry.linkpath ?? "";
  if (entry.type === "SymbolicLink") {
    if (posix.isAbsolute(link)) return `is a symlink to the absolute path ${link}`;
    const target = posix.join(posix.dirname(entry.path), link);
    if (escapes(target)) return `is a symlink to ${link}, outside the root`;
    if (within !== undefined && !inside(target, within)) return `is a symlink to ${link}, outside ${within}`;
    return undefined;
  }
  if (entry.type === "Link") {
    if (posix.isAbsolute(link) || escapes(link)) return `is a hard link to ${link}, outside the root`;
    if (within !== undefined && !inside(link, within)) return `is a hard link to ${link}, outside ${within}`;
    return undefined;
  }
  return `has the unsupported type ${entry.type}`;
}

export interface ExtractOptions {
  /** A directory relative to the root that every entry must be (or be inside), e.g. `.claude`. */
  within?: string;
}

/**
 * Extracts the gzipped tar `archive` into `root`; throws, naming the entry, when one would escape
 * (the root, or `within`). On a failure part-way, what the extraction created is removed again.
 */
export async function extractTarGz(
  archive: string,
  root: string,
  options: ExtractOptions = {},
): Promise<void> {
  const problems: string[] = [];
  try {
    await list({
      file: archive,
      strict: true,
      onReadEntry: (entry) => {
        const problem = entryProblem(
          { path: entry.path, type: entry.type, linkpath: entry.linkpath },
          options.within,
        );
        if (problem !== undefined) problems.push(`archive entry ${entry.path} ${problem}`);
      },
    });
  } catch (err) {
    throw archiveError(err);
  }
  if (problems.length > 0) throw new Error(problems[0]);
  const created: string[] = [];
  try {
    // Ownership is the init's to set afterwards (the re-own to 1000:1000), not the archive's.
    await extract({
      file: archive,
      cwd: root,
      strict: true,
      preserveOwner: false,
      filter: (path) => {
        const top = topmostMissing(root, resolve(root, path));
        if (top !== undefined) created.push(top);
        return true;
      },
    });
  } catch (err) {
    for (const path of created.reverse()) await rm(path, { recursive: true, force: true });
    throw archiveError(err);
  }
}

/** The highest directory (or the path itself) between `root` and `path` that does not exist yet. */
function topmostMissing(root: string, path: string): string | undefined {
  let missing: string | undefined;
  for (let p = path; p !== root && p.startsWith(root); p = dirname(p)) {
    if (exists(p)) break;
    missing = p;
  }
  return missing;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** node-tar's errors carry their cause in the message (`TAR_ABORT: zlib: …`); keep it, without the code alone. */
function archiveError(err: unknown): Error {
  const e = err as { code?: unknown; message?: unknown };
  const message = typeof e?.message === "string" && e.message !== "" ? e.message : String(err);
  const code = typeof e?.code === "string" && !message.includes(e.code) ? `${e.code}: ` : "";
  return new Error(`the archive cannot be extracted: ${code}${message}`);
}
