/**
 * Starts one container as a local process, the way a container runtime would as far as the run
 * pods can tell: its own mount namespace (`unshare --mount --propagation private`) with the pod's
 * volume dirs bind-mounted at the container's mount paths (read-only where asked) and the image's
 * bin dir over /usr/local/bin, the working directory created if missing, the user and group of the
 * securityContext (`setpriv`), and only the container's own environment. The process leads its own
 * process group, so a signal to the group reaches everything it started.
 *
 * Paths and argv reach the inner shell as positional parameters, never spliced into the script.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { ContainerSpec, PodJson } from "./pod-runner-types.js";

export interface BindMount {
  source: string;
  target: string;
  readOnly: boolean;
}

export interface ContainerLaunch {
  argv: string[];
  env: Record<string, string>;
  workingDir: string;
  mounts: BindMount[];
  /** undefined: stay root, as an image without USER would. */
  user?: { uid: number; gid: number; groups: number[] };
}

/**
 * Positional parameters: <mount count> then (source target ro|rw) per mount, then workingDir,
 * uid, gid, groups (comma-separated), then the container's argv.
 */
const INNER_SCRIPT = `
set -e
n=$1; shift
while [ "$n" -gt 0 ]; do
  /usr/bin/mount --bind -- "$1" "$2"
  if [ "$3" = ro ]; then /usr/bin/mount -o remount,bind,ro -- "$2"; fi
  shift 3
  n=$((n - 1))
done
/usr/bin/mkdir -p -- "$1"
cd -- "$1"
uid=$2; gid=$3; groups=$4
shift 4
unset PWD OLDPWD
if [ -z "$uid" ]; then exec "$@"; fi
if [ -z "$groups" ]; then exec /usr/bin/setpriv --reuid "$uid" --regid "$gid" --clear-groups -- "$@"; fi
exec /usr/bin/setpriv --reuid "$uid" --regid "$gid" --groups "$groups" -- "$@"
`;

/** Arguments of `unshare` that run `launch` (exported for the unit test of the argv layout). */
export function unshareArgs(launch: ContainerLaunch): string[] {
  const positional = [String(launch.mounts.length)];
  for (const m of launch.mounts) positional.push(m.source, m.target, m.readOnly ? "ro" : "rw");
  positional.push(
    launch.workingDir,
    launch.user ? String(launch.user.uid) : "",
    launch.user ? String(launch.user.gid) : "",
    launch.user ? launch.user.groups.join(",") : "",
    ...launch.argv,
  );
  return [
    "--mount",
    "--propagation",
    "private",
    "--",
    "/bin/sh",
    "-c",
    INNER_SCRIPT,
    "pod-runner",
    ...positional,
  ];
}

export function startContainerProcess(launch: ContainerLaunch): ChildProcess {
  return spawn("/usr/bin/unshare", unshareArgs(launch), {
    detached: true,
    env: launch.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** The user the container runs as: container securityContext over the pod's; fsGroup as supplementary group. */
export function containerUser(
  pod: PodJson,
  container: ContainerSpec,
): { user?: ContainerLaunch["user"]; nonRootViolation?: string } {
  const podCtx = pod.spec.securityContext ?? {};
  const ctx = container.securityContext ?? {};
  const uid = ctx.runAsUser ?? podCtx.runAsUser;
  const gid = ctx.runAsGroup ?? podCtx.runAsGroup ?? 0;
  const nonRoot = ctx.runAsNonRoot ?? podCtx.runAsNonRoot;
  if (nonRoot && (uid === undefined || uid === 0)) {
    const where = `(pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})", container: ${container.name})`;
    return {
      nonRootViolation:
        uid === 0
          ? `container's runAsUser breaks non-root policy ${where}`
          : `container has runAsNonRoot and image will run as root ${where}`,
    };
  }
  if (uid === undefined) return {};
  const groups = podCtx.fsGroup !== undefined ? [podCtx.fsGroup] : [];
  return { user: { uid, gid, groups } };
}

export interface ImageConfig {
  /** Used when the container sets no `command` (the image's ENTRYPOINT). */
  entrypoint?: string[];
  /** Bind-mounted over /usr/local/bin in this image's containers. */
  binDir: string;
}

/**
 * The argv a runtime would exec: `command` (else the image's entrypoint) followed by `args`, with
 * `$(VAR)` references expanded. Throws naming the container when there is nothing to run.
 */
export function containerArgv(
  container: ContainerSpec,
  image: ImageConfig | undefined,
  expand: (s: string) => string,
): string[] {
  const command = container.command?.length ? container.command : (image?.entrypoint ?? []);
  const argv = [...command, ...(container.args ?? [])].map(expand);
  if (argv.length === 0) {
    throw new Error(
      `container ${container.name}: no command, and the pod runner knows no entrypoint for image ${JSON.stringify(container.image ?? "")}`,
    );
  }
  return argv;
}
