#!/usr/bin/env bash
# The test command: installs what it needs, then runs every unit and
# integration test (the integration project starts its own local control plane).
# Ends with a plain "N passed, N failed, N skipped" line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/ensure-deps.sh

mkdir -p .cache
report=".cache/vitest-report.json"
rm -f "$report"
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
if [[ -f "$report" ]]; then
  node -e '
    const r = require(process.argv[1]);
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
    if (r.numTotalTests === 0) { console.error("no test ran"); process.exit(1); }
  ' "$ROOT/$report" || status=1
fi
exit "$status"
