#!/usr/bin/env bash
# Builds the real node's NetworkPolicy engine (docs/real-node.md "NetworkPolicies"): the controller
# of sigs.k8s.io/kube-network-policies (SIG Network; nftables + nfqueue) at a pinned version, with
# the small main in scripts/cluster/network-policies/ (a kubeconfig instead of in-cluster config),
# into a cache directory keyed by version, as build.sh does for the plane. Nothing here is committed.
#
# Usage: scripts/cluster/build-network-policies.sh   -> prints the binary's path on stdout
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KNP_VERSION="${KNP_VERSION:-v0.8.0}"
CACHE="${CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-agent-subsystem/control-plane}"
# The main's content is part of the key: an edit to it builds anew.
SUM="$(sha256sum "$HERE/network-policies/main.go" | cut -c1-12)"
KEY="kube-network-policies-${KNP_VERSION}-${SUM}"
BIN="$CACHE/$KEY/bin/kube-network-policies"
[[ -x "$BIN" ]] && { echo "$BIN"; exit 0; }

command -v go >/dev/null || { echo "build-network-policies.sh: Go is required for the first build" >&2; exit 1; }
mkdir -p "$CACHE/$KEY"
exec 9>"$CACHE/$KEY.lock"
if ! flock -n 9; then
  echo "[network-policies build] another build of $KEY is running; waiting for it" >&2
  flock 9
fi
[[ -x "$BIN" ]] && { echo "$BIN"; exit 0; }
WORK="$CACHE/$KEY/src"
rm -rf "$WORK" && mkdir -p "$WORK" "$(dirname "$BIN")"
cp "$HERE/network-policies/main.go" "$WORK/"
printf 'module example.invalid/netpolbin\n\ngo 1.24.0\n' > "$WORK/go.mod"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
start=$(date +%s)
echo "[network-policies build] resolving sigs.k8s.io/kube-network-policies $KNP_VERSION" >&2
(cd "$WORK" && go get "sigs.k8s.io/kube-network-policies@$KNP_VERSION" >&2 && go mod tidy >&2)
echo "[network-policies build] compiling" >&2
(cd "$WORK" && go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" . >&2)
mv "$BIN.tmp" "$BIN"
echo "[network-policies build] built in $(( $(date +%s) - start ))s: $BIN" >&2
echo "$BIN"
