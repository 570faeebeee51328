#!/usr/bin/env bash
# npm run dev: local control plane (built on first use by scripts/cluster/build.sh), the
# project's CRDs and examples, and the controller in the foreground. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Install npm packages and build (or find) the binaries first, so a fresh machine needs nothing else
# and the long first build shows its progress here.
bash scripts/ensure-deps.sh
exec npx tsx test/harness/dev.ts "$@"
