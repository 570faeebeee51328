#!/usr/bin/env bash
# npm run dev: local control plane (built on first use by scripts/cluster/build.sh), the
# project's CRDs and examples, and the controller in the foreground. Ctrl-C, or a signal to this
# process or to npm, stops everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Install npm packages and build (or find) the binaries first, so a fresh machine needs nothing else
# and the long first build shows its progress here.
bash scripts/ensure-deps.sh
# node itself (not npx/tsx in front of it), so a signal to this process reaches dev.ts's handler,
# which stops the controller and the plane.
exec node --import tsx test/harness/dev.ts "$@"
