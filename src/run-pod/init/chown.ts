/**
 * Handing HOME and the workspace to the agent's uid (docs/run-pod.md#the-init step 5): every entry is
 * re-owned with lchown and a symlink is never followed or descended into, so a link a cloned repo
 * carries cannot make the root init re-own a file outside these trees.
 */
import { lchown, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

export const AGENT_UID = 1000;
export const AGENT_GID = 1000;

/** Re-owns `root` and everything below it; throws an Error naming the path that failed. */
export async function lchownTree(root: string, uid = AGENT_UID, gid = AGENT_GID): Promise<void> {
  const stack = [root];
  for (let path = stack.pop(); path !== undefined; path = stack.pop()) {
    try {
      await lchown(path, uid, gid);
      const st = await lstat(path);
      if (!st.isDirectory()) continue;
      for (const name of await readdir(path)) stack.push(join(path, name));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new Error(`cannot re-own ${path} to ${uid}:${gid} (${code})`);
    }
  }
}
