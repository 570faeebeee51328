#!/usr/bin/env bash
# Builds the real node's NetworkPolicy engine (docs/real-node.md "NetworkPolicies"): kube-router in
# firewall-only mode (iptables + ipset), from its Go module at a pinned version, into a cache
# directory keyed by version, as build.sh does for the plane. Nothing here is committed.
#
# Usage: scripts/cluster/build-network-policies.sh   -> prints the binary's path on stdout
set -euo pipefail

KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"
CACHE="${CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-agent-subsystem/control-plane}"
KEY="kube-router-${KUBE_ROUTER_VERSION}"
BIN="$CACHE/$KEY/bin/kube-router"
[[ -x "$BIN" ]] && { echo "$BIN"; exit 0; }

command -v go >/dev/null || { echo "build-network-policies.sh: Go is required for the first build" >&2; exit 1; }
mkdir -p "$CACHE/$KEY"
# One build at a time per cache, as in build.sh.
exec 9>"$CACHE/$KEY.lock"
if ! flock -n 9; then
  echo "[network-policies build] another build of $KEY is running; waiting for it" >&2
  flock 9
fi
[[ -x "$BIN" ]] && { echo "$BIN"; exit 0; }
WORK="$CACHE/$KEY/src"
mkdir -p "$WORK" "$(dirname "$BIN")"
printf 'module example.invalid/kuberouterbin\n\ngo 1.24.0\n' > "$WORK/go.mod"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
start=$(date +%s)
pkg=github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
echo "[network-policies build] resolving $pkg@$KUBE_ROUTER_VERSION" >&2
(cd "$WORK" && go get "$pkg@$KUBE_ROUTER_VERSION" >&2)
echo "[network-policies build] compiling" >&2
(cd "$WORK" && go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" "$pkg" >&2)
mv "$BIN.tmp" "$BIN"
echo "[network-policies build] built in $(( $(date +%s) - start ))s: $BIN" >&2
echo "$BIN"
