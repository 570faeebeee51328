#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: the npm packages pinned by
# package-lock.json and the local control-plane binaries (built once from Go
# modules into .cache/, see docs/control-plane.md). Safe to re-run: both steps
# are skipped when already done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

stamp="node_modules/.package-lock.json"
if [[ ! -f "$stamp" || package-lock.json -nt "$stamp" ]]; then
  echo "[setup] npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi

echo "[setup] control-plane binaries" >&2
bash scripts/cluster/build.sh >/dev/null
