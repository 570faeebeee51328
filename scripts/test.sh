#!/usr/bin/env bash
# The test command: installs what it needs, then runs every unit and
# integration test (the integration project starts its own local control plane).
# Ends with a plain "N passed, N failed, N skipped" line.
#
# Two vitest runs: the first runs the unit and integration projects (the integration project's
# shared plane holds the machine's one real node for its whole run); the second runs the own-node
# project, whose files each start a plane with a real node of their own (vitest.config.ts).
# Arguments go to both runs; a run that selects no file of its projects is not an error.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/ensure-deps.sh

mkdir -p .cache
status=0
reports=()
for projects in "--project unit --project integration" "--project own-node"; do
  report=".cache/vitest-report-${#reports[@]}.json"
  rm -f "$report"
  # shellcheck disable=SC2086 # the project flags split on purpose
  npx vitest run $projects --passWithNoTests --reporter=default --reporter=json --outputFile.json="$report" "$@" ||
    status=$?
  reports+=("$ROOT/$report")
done
node -e '
  const fs = require("node:fs");
  let passed = 0, failed = 0, skipped = 0, total = 0;
  for (const file of process.argv.slice(1)) {
    if (!fs.existsSync(file)) { console.error(`no report: ${file}`); process.exitCode = 1; continue; }
    const r = require(file);
    passed += r.numPassedTests; failed += r.numFailedTests;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0); total += r.numTotalTests;
  }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (total === 0) { console.error("no test ran"); process.exit(1); }
' "${reports[@]}" || status=1
exit "$status"
