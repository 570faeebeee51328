/**
 * Where argv[0] is on PATH (docs/supervisor.md#order-of-one-interactive-run): the supervisor reports `reason=not-found`
 * itself instead of letting the spawn fail, and spawns the resolved file so both agree.
 */
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { join } from "node:path";

/** PATH when the environment has none (a container always sets one). */
const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The executable file `command` names: a name with a slash is taken as a path, any other name is
 * searched in PATH's directories in order (an empty entry is the working directory, as in a shell).
 * Undefined when there is no such executable regular file.
 */
export async function findExecutable(
  command: string,
  pathVar: string | undefined,
): Promise<string | undefined> {
  if (command === "") return undefined;
  if (command.includes("/")) return (await isExecutableFile(command)) ? command : undefined;
  for (const dir of (pathVar ?? FALLBACK_PATH).split(":")) {
    const candidate = dir === "" ? `./${command}` : join(dir, command);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}
