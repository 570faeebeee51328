/**
 * Starts one container as a local process, the way a container runtime would as far as the run
 * pods can tell: its own mount namespace (`unshare --mount --propagation private`) with the pod's
 * volume dirs bind-mounted at the container's mount paths (read-only where asked) and the image's
 * bin dir over /usr/local/bin, the working directory created if missing, the user and group of the
 * securityContext (`setpriv`), and only the container's own environment. The process leads its own
 * process group, so a signal to the group reaches everything it started.
 *
 * Paths and argv reach the inner program as arguments, never spliced into its text.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { ContainerSpec, PodJson } from "./types.js";

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
 * The inner program, run by perl (perl-base, always present on Debian) rather than a POSIX shell:
 * dash drops environment entries whose names are not shell identifiers (e.g. `sink-headers`, which
 * the controller injects for an http sink's `headers_secret`), and bash adds SHLVL; a container
 * runtime passes the env through untouched, and so does perl's exec.
 *
 * Arguments: <mount count> then (source target ro|rw) per mount, then workingDir, uid, gid,
 * groups (comma-separated), then the container's argv.
 */
const INNER_PROGRAM = `
use strict;
my @a = @ARGV;
my $n = shift @a;
sub run { system(@_) == 0 or die "pod runner: @_ failed\\n"; }
for (1 .. $n) {
  my ($source, $target, $mode) = splice(@a, 0, 3);
  run("/usr/bin/mount", "--bind", "--", $source, $target);
  run("/usr/bin/mount", "-o", "remount,bind,ro", "--", $target) if $mode eq "ro";
}
my ($wd, $uid, $gid, $groups, @argv) = @a;
run("/usr/bin/mkdir", "-p", "--", $wd);
chdir $wd or die "pod runner: chdir $wd: $!\\n";
if ($uid ne "") {
  unshift @argv, "/usr/bin/setpriv", "--reuid", $uid, "--regid", $gid,
    ($groups eq "" ? ("--clear-groups") : ("--groups", $groups)), "--";
}
exec { $argv[0] } @argv;
print STDERR "pod runner: exec $argv[0]: $!\\n";
exit 127;
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
    "/usr/bin/perl",
    "-e",
    INNER_PROGRAM,
    "--",
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
  /**
   * More of the image's filesystem: host dirs bind-mounted into its containers (e.g. a cache
   * outside the world-readable part of the host that the bin dir's symlinks point into).
   */
  mounts?: BindMount[];
  /** Why the image cannot be used on this machine: its containers wait with CreateContainerError saying so. */
  unavailable?: string;
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
