/**
 * Safe extraction of a tar.gz (conversation archives, skills) into a root directory: the archive
 * is listed first and refused as a whole when any entry would land outside the root (an absolute
 * or `..` path, a link whose target leaves the root, a device or FIFO). Only then is it extracted,
 * with node-tar's own guards (no writing through symlinks) as a second line.
 */
import { posix } from "node:path";
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

/** Why an entry would escape the extraction root, else undefined. */
export function entryProblem(entry: ArchiveEntry): string | undefined {
  if (META_TYPES.has(entry.type)) return undefined;
  if (posix.isAbsolute(entry.path) || /^[A-Za-z]:/.test(entry.path)) return "is an absolute path";
  if (entry.path.split("/").includes("..")) return "contains a '..' component";
  if (PLAIN_TYPES.has(entry.type)) return undefined;
  const link = entry.linkpath ?? "";
  if (entry.type === "SymbolicLink") {
    if (posix.isAbsolute(link)) return `is a symlink to the absolute path ${link}`;
    if (escapes(posix.join(posix.dirname(entry.path), link)))
      return `is a symlink to ${link}, outside the root`;
    return undefined;
  }
  if (entry.type === "Link") {
    if (posix.isAbsolute(link) || escapes(link)) return `is a hard link to ${link}, outside the root`;
    return undefined;
  }
  return `has the unsupported type ${entry.type}`;
}

/** Extracts the gzipped tar `archive` into `root`; throws, naming the entry, when one would escape. */
export async function extractTarGz(archive: string, root: string): Promise<void> {
  const problems: string[] = [];
  await list({
    file: archive,
    strict: true,
    onReadEntry: (entry) => {
      const problem = entryProblem({ path: entry.path, type: entry.type, linkpath: entry.linkpath });
      if (problem !== undefined) problems.push(`archive entry ${entry.path} ${problem}`);
    },
  });
  if (problems.length > 0) throw new Error(problems[0]);
  // Ownership is the init's to set afterwards (the re-own to 1000:1000), not the archive's.
  await extract({ file: archive, cwd: root, strict: true, preserveOwner: false });
}
