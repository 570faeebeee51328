/**
 * `$HOME/run/exit-code`: how the courier container learns the agent's result (OQ-48). Written
 * through a temporary file and a rename, so a reader never sees a half-written code.
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
