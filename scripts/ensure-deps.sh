#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: the npm packages pinned by
# package-lock.json, the run-pod executable dist/agent/ai-agent (npm run build:agent,
# docs/run-pod.md; integration tests run it in pods) and the local control-plane
# binaries (built once from Go modules into .cache/, see docs/control-plane.md).
# Safe to re-run: each step is skipped when already done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

stamp="node_modules/.package-lock.json"
if [[ ! -f "$stamp" || package-lock.json -nt "$stamp" ]]; then
  echo "[setup] npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi

# The build keeps a fingerprint and returns at once when nothing changed; this check
# skips even starting it when no input is newer than the executable.
agent="dist/agent/ai-agent"
if [[ ! -x "$agent" ]] ||
  [[ -n "$(find src generated scripts/build-agent.ts package-lock.json "$(readlink -f "$(command -v node)")" \
    -newer "$agent" -print -quit)" ]]; then
  echo "[setup] run-pod executable (npm run build:agent)" >&2
  npm run --silent build:agent >&2
fi

# tini's static build is the agent image's reaper (src/run-pod/witness/reaper.ts); the reaper test
# runs it as PID 1 of a PID namespace. Installed from Debian's packages when we may; else that test
# skips and says why.
if [[ ! -x /usr/bin/tini-static ]] && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "[setup] tini (apt-get)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tini; } >&2 ||
    echo "[setup] tini could not be installed; the reaper test will skip" >&2
fi

# The real images and the real node (docs/images.md, docs/real-node.md): buildah and debootstrap build
# the Dockerfile's images; containerd, runc and the CNI plugins run pods on a real kubelet; iptables
# is what kube-proxy programs, and with ipset what kube-router (the NetworkPolicy engine) programs. Debian packages, installed when we may; else those tests skip and say why.
node_packages=(buildah debootstrap containerd runc containernetworking-plugins iptables ipset)
missing_packages=()
for p in "${node_packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing_packages+=("$p"); done
if ((${#missing_packages[@]} > 0)); then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "[setup] ${missing_packages[*]} (apt-get)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_packages[@]}"; } >&2 ||
      echo "[setup] ${missing_packages[*]} could not be installed; the image and real-node tests will skip" >&2
  else
    echo "[setup] not installed: ${missing_packages[*]} (needs root and apt-get); the image and real-node tests will skip" >&2
  fi
fi

echo "[setup] control-plane binaries" >&2
bash scripts/cluster/build.sh >/dev/null
