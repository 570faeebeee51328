/**
 * The delivered clone's `.git` read as data, never by a git process: the agent (and, through
 * `spec.files`, the Agent's author) could write anything there, and git acts on what a
 * repository's config says (a promisor remote's lazy fetch runs `core.sshCommand`, a filter or
 * hook runs its command, `core.worktree` points the work tree anywhere). The courier therefore
 * reads the few things it needs itself, HEAD, the ref it names, the index and `info/exclude`,
 * and hands git only its own repository, which borrows the clone's objects (docs/run-pod.md,
 * "The clone is untrusted").
 *
 * Every file is read through its real path, which must lie inside the clone's real `.git`, and
 * no content is ever put in a message: only shapes that were checked (a commit id, a ref name).
 */
import { lstat, readFile, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";

export class CloneGitDirError extends Error {}

export interface CloneHead {
  /** The clone's `.git` directory (real path). */
  gitDir: string;
  /** `refs/heads/<b>` when HEAD is a branch; undefined when detached. */
  ref?: string;
  /** The commit HEAD names; undefined for a branch with no commit yet. */
  commit?: string;
}

const SHA1 = /^[0-9a-f]{40}$/;
/** What a branch name may hold here (a subset of git check-ref-format, enough for a clone's HEAD). */
const REF = /^refs\/heads\/(?!.*\.\.)(?!.*\/\.)(?!.*\.lock(?:\/|$))[A-Za-z0-9._/+-]+$/;
const MAX_SMALL_FILE = 64 * 1024;

/** The clone's `.git` directory; it must be a real directory (not a gitlink file or a symlink). */
export async function cloneGitDir(cloneDir: string): Promise<string> {
  const dotGit = join(cloneDir, ".git");
  const st = await lstat(dotGit).catch(() => undefined);
  if (!st) throw new CloneGitDirError(`${cloneDir} has no .git directory`);
  if (!st.isDirectory()) throw new CloneGitDirError(`${dotGit} is not a directory`);
  return realpath(dotGit);
}

/**
 * The content of `<gitDir>/<rel>` when it is a regular file whose real path is inside gitDir and
 * no larger than maxBytes; undefined when it does not exist. Anything else is refused.
 */
export async function readInside(gitDir: string, rel: string, maxBytes: number): Promise<Buffer | undefined> {
  const path = join(gitDir, rel);
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new CloneGitDirError(`${path} cannot be resolved (${(err as NodeJS.ErrnoException).code})`);
  }
  const inside = relative(gitDir, real);
  if (inside === "" || inside.startsWith("..") || inside.startsWith(sep)) {
    throw new CloneGitDirError(`${path} resolves outside the clone's .git`);
  }
  const st = await stat(real);
  if (!st.isFile()) throw new CloneGitDirError(`${path} is not a regular file`);
  if (st.size > maxBytes) throw new CloneGitDirError(`${path} is larger than ${maxBytes} bytes`);
  return readFile(real);
}

/** HEAD and the commit it names, from `HEAD`, the loose ref or `packed-refs`. */
export async function readCloneHead(cloneDir: string): Promise<CloneHead> {
  const gitDir = await cloneGitDir(cloneDir);
  const head = (await readInside(gitDir, "HEAD", MAX_SMALL_FILE))?.toString("utf8").trim();
  if (head === undefined) throw new CloneGitDirError(`${gitDir}/HEAD is missing`);
  if (SHA1.test(head)) return { gitDir, commit: head };
  const ref = /^ref: (.+)$/.exec(head)?.[1];
  if (ref === undefined || !REF.test(ref)) {
    throw new CloneGitDirError(`${gitDir}/HEAD names neither a commit nor a branch`);
  }
  const loose = (await readInside(gitDir, ref, MAX_SMALL_FILE))?.toString("utf8").trim();
  if (loose !== undefined) {
    if (!SHA1.test(loose)) throw new CloneGitDirError(`${gitDir}/${ref} holds no commit id`);
    return { gitDir, ref, commit: loose };
  }
  const packed = (await readInside(gitDir, "packed-refs", 64 * 1024 * 1024))?.toString("utf8") ?? "";
  for (const line of packed.split("\n")) {
    const [sha, name] = line.trim().split(" ");
    if (name === ref && sha !== undefined && SHA1.test(sha)) return { gitDir, ref, commit: sha };
  }
  return { gitDir, ref };
}
