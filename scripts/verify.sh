#!/usr/bin/env bash
# npm run verify: the fast local gate before a commit (no control plane, no Go): generated code
# matches schemas/, types check, lint is clean, every unit test passes. .ci/run runs this and then
# the integration tests (npm test). Each step names itself so a failure says which gate failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -d node_modules ]] || npm ci --no-audit --no-fund
step() { echo "== verify: $1" >&2; }
step "codegen:check"; npm run --silent codegen:check
step "typecheck"; npm run --silent typecheck
step "lint"; npm run --silent lint
step "unit tests"; npx vitest run --project unit --reporter=dot
