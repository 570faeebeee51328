#!/usr/bin/env bash
# npm run verify: the fast local gate before a commit (no control plane, no Go): generated code
# matches schemas/, types check, lint is clean, the unit tests pass except the files tagged slow
# (`// @module-tag slow`: they drive git, tsc or the supervisor for seconds each; vitest.config.ts).
# .ci/run runs this and then `npm test`, which runs every unit test (slow ones included) and the
# integration tests. Each step names itself so a failure says which gate failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -d node_modules ]] || npm ci --no-audit --no-fund
step() { echo "== verify: $1" >&2; }
step "codegen:check"; npm run --silent codegen:check
step "typecheck"; npm run --silent typecheck
step "lint"; npm run --silent lint
step "unit tests (without the slow files)"; npx vitest run --project unit --tags-filter='!slow' --reporter=dot
