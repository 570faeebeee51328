#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) and the real node's kubelet, kube-proxy and pause (docs/real-node.md) from
# pinned Go module versions into a cache directory keyed by version. Nothing here is
# committed; see docs/control-plane.md.
#
# Usage: scripts/cluster/build.sh   -> prints the bin directory on stdout
# KUBEBUILDER_ASSETS, when it names a directory holding all eight binaries,
# is used instead of building.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

K8S_VERSION="${K8S_VERSION:-v1.33.13}"
ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
# Each binary is built only when missing, so adding one to this list builds just that one into an
# existing cache (the kubelet and kube-proxy came after the first five).
K8S_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
# pause: the real node's sandbox process (scripts/cluster/pause), a static program of this repository.
BINARIES=(etcd kwok "${K8S_COMMANDS[@]}" pause)

# One cache per machine (not per checkout), so every clone and CI run on it reuses one build.
CACHE="${CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-agent-subsystem/control-plane}"
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
BIN="$CACHE/$KEY/bin"

have_all() {
  local dir="$1"
  for b in "${BINARIES[@]}"; do [[ -x "$dir/$b" ]] || return 1; done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && have_all "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi
if have_all "$BIN"; then echo "$BIN"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is required for the first build (or set KUBEBUILDER_ASSETS)" >&2; exit 1; }
mkdir -p "$BIN"
# One build at a time per cache: a second caller (another test run, npm run dev) waits for the
# first instead of compiling the same packages beside it on the same cores, then finds them built.
exec 9>"$CACHE/$KEY.lock"
if ! flock -n 9; then
  echo "[control-plane build] another build of $KEY is running; waiting for it" >&2
  flock 9
fi
if have_all "$BIN"; then echo "$BIN"; exit 0; fi
WORK="$CACHE/$KEY/src"
mkdir -p "$WORK"
log() { echo "[control-plane build] $*" >&2; }
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

build_k8s() {
  local dir="$WORK/k8sbin" minor patch v0 c missing=()
  for c in "${K8S_COMMANDS[@]}"; do [[ -x "$BIN/$c" ]] || missing+=("$c"); done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  minor="$(echo "$K8S_VERSION" | cut -d. -f2)"; patch="$(echo "$K8S_VERSION" | cut -d. -f3)"
  v0="v0.${minor}.${patch}"
  mkdir -p "$dir"
  {
    echo "module example.invalid/k8sbin"; echo; echo "go 1.24.0"; echo; echo "godebug default=go1.24"; echo
    echo "require k8s.io/kubernetes $K8S_VERSION"; echo; echo "replace ("
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
      cluster-bootstrap code-generator component-base component-helpers controller-manager \
      cri-api cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
      kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet \
      metrics mount-utils pod-security-admission sample-apiserver; do
      echo "	k8s.io/$m => k8s.io/$m $v0"
    done
    echo ")"
  } > "$dir/go.mod"
  local pkgs=() gets=()
  for c in "${missing[@]}"; do
    pkgs+=("k8s.io/kubernetes/cmd/$c"); gets+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION")
  done
  log "resolving k8s.io/kubernetes $K8S_VERSION"
  (cd "$dir" && go get "${gets[@]}" >&2)
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  log "compiling ${missing[*]}"
  (cd "$dir" && go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags="$ld" -o "$BIN/" "${pkgs[@]}" >&2)
}

build_etcd() {
  local dir="$WORK/etcdbin"
  mkdir -p "$dir"
  printf 'module example.invalid/etcdbin\n\ngo 1.24.0\n' > "$dir/go.mod"
  log "building etcd $ETCD_VERSION"
  (cd "$dir" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2 \
    && go build -trimpath -ldflags="-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 >&2)
}

build_kwok() {
  log "building kwok $KWOK_VERSION"
  GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
}

build_pause() {
  log "building pause"
  (cd "$HERE/pause" && go build -trimpath -ldflags="-s -w" -o "$BIN/pause" . >&2)
}

start=$(date +%s)
[[ -x "$BIN/etcd" ]] || build_etcd
[[ -x "$BIN/kwok" ]] || build_kwok
build_k8s
[[ -x "$BIN/pause" ]] || build_pause
have_all "$BIN" || { echo "build.sh: build finished but binaries are missing in $BIN" >&2; exit 1; }
log "built in $(( $(date +%s) - start ))s into $BIN"
echo "$BIN"
