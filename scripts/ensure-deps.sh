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

echo "[setup] control-plane binaries" >&2
bash scripts/cluster/build.sh >/dev/null
