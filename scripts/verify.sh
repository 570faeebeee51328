#!/usr/bin/env bash
# npm run verify: the fast local gate before a commit (no control plane, no Go): generated code
# matches schemas/, types check, lint is clean, the unit tests pass except the files tagged slow
# (`// @module-tag slow`: they drive git, tsc or the supervisor for seconds each; vitest.config.ts
# defines the tags).
# .ci/run runs this and then `npm test`, which runs every unit test (slow ones included) and the
# integration tests. Each step names itself so a failure says which gate failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -d node_modules ]] || npm ci --no-audit --no-fund
step() { echo "== verify: $1" >&2; }
step "codegen:check"; npm run --silent codegen:check
step "typecheck"; npm run --silent typecheck
step "lint"; npm run --silent lint
# Vitest's default is availableParallelism() - 1 workers, one on a 2-core machine, and a fresh module
# graph per file; the files that share one run in two workers without that per-file start-up, which
# was most of the step's time. The files that replace a module (tagged isolated) run on their own,
# named by path: a tag filter alone would load every file again to read its tags.
step "unit tests (without the slow files)"
npx vitest run --project unit --tags-filter='!slow && !isolated' --no-isolate --maxWorkers=2 --reporter=dot
mapfile -t isolated < <(grep -rlE --include='*.test.ts' '^// @module-tag isolated$' src codegen test)
if ((${#isolated[@]} > 0)); then
  npx vitest run --project unit --tags-filter='!slow' --reporter=dot "${isolated[@]}"
fi
