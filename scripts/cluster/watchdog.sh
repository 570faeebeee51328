#!/usr/bin/env bash
# Stops a test control plane when the process that started it dies without stopping it
# (e.g. the test runner was killed), and takes its real node off the machine if it had one.
# Started by test/harness/cluster.ts, one per plane.
# Usage: watchdog.sh <owner pid> <plane dir> [<etcd data dir>]
# <plane dir>/pgids lists the process-group ids of the plane's components, one per line.
# The plane's normal stop removes <plane dir>/pgids, which ends this watchdog silently.
set -u
owner="$1" dir="$2" data="${3:-}"
while kill -0 "$owner" 2>/dev/null; do
  [[ -f "$dir/pgids" ]] || exit 0
  sleep 1
done
[[ -f "$dir/pgids" ]] || exit 0
# A real node first (docs/real-node.md): it stops its own kubelet and containerd, then puts back
# what it changed on the machine (sysctls, mounts, cgroups, bridge, paths).
if [[ -d "$dir/real-node/teardown" ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/node-teardown.sh" "$dir/real-node"
fi
mapfile -t groups < "$dir/pgids"
for g in "${groups[@]}"; do [[ -n "$g" ]] && kill -TERM -- "-$g" 2>/dev/null; done
for _ in 1 2 3 4 5 6 7 8 9 10; do
  alive=0
  for g in "${groups[@]}"; do [[ -n "$g" ]] && kill -0 -- "-$g" 2>/dev/null && alive=1; done
  [[ $alive == 0 ]] && break
  sleep 0.5
done
for g in "${groups[@]}"; do [[ -n "$g" ]] && kill -KILL -- "-$g" 2>/dev/null; done
rm -f "$dir/pgids"
[[ -n "$data" ]] && rm -rf "$data"
exit 0
