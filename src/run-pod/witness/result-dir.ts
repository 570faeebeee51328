/**
 * Where the witness records the agent's result and how the courier decides it may trust it
 * (docs/security.md, "The agent's result"). The directory is the `agent-result` volume, mounted
 * read-write in the `agent` container (for the witness, which runs as root) and read-only in the
 * `courier`; neither the init nor any other container has it.
 */
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";

/** AGENT_RESULT_DIR when unset; the Job builder sets it to the same path. */
export const DEFAULT_RESULT_DIR = "/run/ai-agent-result";
export const RESULT_FILE = "exit-code";
export const WITNESS_SOCKET = "witness.sock";

export type RecordedResult =
  | { state: "absent" }
  | { state: "exited"; code: number }
  /** Present but not the witness's (wrong owner or mode, not an integer): never delivered. */
  | { state: "untrusted"; why: string };

/**
 * The witness's record in `dir`: trusted only when the directory and the file belong to `ownerUid`
 * (root in a pod) and neither is writable by group or others, so no other uid could have put it
 * there; the file must be a plain file with one link.
 */
export async function readRecordedResult(dir: string, ownerUid = 0): Promise<RecordedResult> {
  const path = join(dir, RESULT_FILE);
  let file: Awaited<ReturnType<typeof lstat>>;
  try {
    file = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { state: "absent" };
    throw err;
  }
  const parent = await lstat(dir);
  if (!parent.isDirectory() || parent.uid !== ownerUid || (parent.mode & 0o022) !== 0) {
    return { state: "untrusted", why: `${dir} is not writable by uid ${ownerUid} alone` };
  }
  if (!file.isFile() || file.nlink !== 1) return { state: "untrusted", why: `${path} is not a plain file` };
  if (file.uid !== ownerUid || (file.mode & 0o022) !== 0) {
    return { state: "untrusted", why: `${path} was not written by the witness (owner uid ${file.uid})` };
  }
  const text = (await readFile(path, "utf8")).trim();
  if (!/^\d{1,3}$/.test(text)) return { state: "untrusted", why: `${path} holds no exit code` };
  return { state: "exited", code: Number(text) };
}
