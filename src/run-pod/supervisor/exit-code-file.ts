/**
 * `$HOME/run/exit-code`: the supervisor's own note of its exit code, for a person or tool looking
 * at the agent volume. Nothing trusts it: the agent's uid can write it. The courier reads the
 * witness's record instead (src/run-pod/witness/, docs/security.md). Written through a temporary
 * file and a rename, so a reader never sees a half-written code.
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

export function exitCodePath(home: string): string {
  return join(home, "run", "exit-code");
}

/** Writes `<code>\n`; throws what the filesystem threw. */
export async function writeExitCodeFile(home: string, exitCode: number): Promise<string> {
  const path = exitCodePath(home);
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${exitCode}\n`, { mode: 0o644 });
  await rename(tmp, path);
  return path;
}
