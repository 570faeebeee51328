/**
 * A memory limit enforced by the kernel, as a container runtime enforces a pod's: a cgroup of its
 * own with its memory limit (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`), for a test that
 * runs a process as the Deployment runs it inside its 512 MiB limit. A process that exceeds it is
 * killed by the kernel's OOM killer, which the cgroup counts (`oom_kill` in v2's memory.events, in
 * v1's memory.oom_control). Making one needs root and a writable cgroup filesystem;
 * `memoryCgroupProblem()` says why not where not, and the caller falls back to a weaker bound.
 *
 * The cgroup is made at the top of the memory hierarchy (v2: the root cgroup may delegate memory
 * while holding processes, a nested one may not) and removed by `remove()`.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const V2_ROOT = "/sys/fs/cgroup";
const V1_ROOT = "/sys/fs/cgroup/memory";

export interface MemoryCgroup {
  /** The cgroup's directory. */
  dir: string;
  version: 1 | 2;
  /** Write a pid here to move that process (and the children it starts afterwards) into the cgroup. */
  procsFile: string;
  /** How often the kernel's OOM killer killed a process of the cgroup. */
  oomKills(): number;
  /** The most memory the cgroup's processes held at once, bytes (0 where the kernel does not say). */
  peakBytes(): number;
  /** Kills what is left in it and removes it. */
  remove(): Promise<void>;
}

/** cgroup v2 with the memory controller delegated to the root's children (never switched on here). */
function v2HasMemory(): boolean {
  try {
    return readFileSync(join(V2_ROOT, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("memory");
  } catch {
    return false;
  }
}

/** Why no memory cgroup can be made here ("" when one can). */
export function memoryCgroupProblem(): string {
  if (process.getuid?.() !== 0) return "making a cgroup needs root";
  if (v2HasMemory()) return "";
  if (existsSync(join(V1_ROOT, "memory.limit_in_bytes"))) return "";
  return `no cgroup memory controller at ${V2_ROOT} (v2) or ${V1_ROOT} (v1)`;
}

/** The value of `key` in a flat-keyed cgroup file (`oom_kill 0`); 0 when absent. */
function keyed(file: string, key: string): number {
  try {
    const line = readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${key} `));
    return line === undefined ? 0 : Number(line.slice(key.length + 1));
  } catch {
    return 0;
  }
}

function numberIn(file: string): number {
  try {
    return Number(readFileSync(file, "utf8").trim()) || 0;
  } catch {
    return 0;
  }
}

/** Makes a memory cgroup named `<prefix>-<8 hex>` limited to `limitBytes`, without swap. */
export async function makeMemoryCgroup(prefix: string, limitBytes: number): Promise<MemoryCgroup> {
  const problem = memoryCgroupProblem();
  if (problem !== "") throw new Error(`cannot make a memory cgroup: ${problem}`);
  const name = `${prefix}-${randomBytes(4).toString("hex")}`;
  const version = v2HasMemory() ? 2 : 1;
  const dir = join(version === 2 ? V2_ROOT : V1_ROOT, name);
  await mkdir(dir);
  const cgroup: MemoryCgroup = {
    dir,
    version,
    procsFile: join(dir, "cgroup.procs"),
    oomKills: () =>
      version === 2
        ? keyed(join(dir, "memory.events"), "oom_kill")
        : keyed(join(dir, "memory.oom_control"), "oom_kill"),
    peakBytes: () => numberIn(join(dir, version === 2 ? "memory.peak" : "memory.max_usage_in_bytes")),
    remove: async () => {
      for (let attempt = 0; ; attempt++) {
        const pids = readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean);
        for (const pid of pids) {
          try {
            process.kill(Number(pid), "SIGKILL");
          } catch {}
        }
        try {
          await rmdir(dir);
          return;
        } catch (err) {
          // EBUSY while the killed processes are still exiting.
          if (attempt >= 50) throw err;
          await sleep(100);
        }
      }
    },
  };
  try {
    if (version === 2) {
      await writeFile(join(dir, "memory.max"), String(limitBytes));
      await writeFile(join(dir, "memory.swap.max"), "0").catch(() => {});
    } else {
      await writeFile(join(dir, "memory.limit_in_bytes"), String(limitBytes));
      // Where swap is accounted, memory + swap gets the same limit: no swap to escape to.
      await writeFile(join(dir, "memory.memsw.limit_in_bytes"), String(limitBytes)).catch(() => {});
    }
  } catch (err) {
    await cgroup.remove();
    throw err;
  }
  return cgroup;
}
