#!/usr/bin/env bash
# npm run test:shaken: the tests (scripts/test.sh) on a shaken bed. Busy loops keep every core of
# the machine busy for the whole run, so the controller, the plane and the tests get the cores late
# and in turns, as on a loaded CI machine: a test that reads once what the controller writes
# asynchronously, instead of waiting for it, fails here (docs/control-plane.md#a-shaken-bed).
#
#   npm run test:shaken [-- [--load N] [--nice K] [--times T] [test.sh / vitest arguments…]]
#
#   --load N   busy loops (default: the number of cores, from nproc)
#   --nice K   their niceness, 0-19 (default 0: each competes with the tests as an equal job;
#              19 hardly slows them)
#   --times T  run scripts/test.sh T times in a row under the same load, stopping at the first
#              failed run (default 1)
# The rest goes to scripts/test.sh and from there to vitest, e.g. one file:
#   npm run test:shaken -- --times 5 test/integration/controller/provider-limits.test.ts
#
# The loops are killed when this script exits (normally, on an error, Ctrl-C or TERM; a signal
# also goes on to the test run); each loop also ends by itself within a fraction of a second once
# this script's process is gone (even after a SIGKILL), so no load outlives the run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

load="$(nproc)"
nice=0
times=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --load | --nice | --times)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || {
        echo "test:shaken: $1 needs a whole number, got '${2-}'" >&2
        exit 2
      }
      case "$1" in --load) load="$2" ;; --nice) nice="$2" ;; --times) times="$2" ;; esac
      shift 2
      ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if ((nice > 19)); then
  echo "test:shaken: --nice must be 0-19, got $nice" >&2
  exit 2
fi
if ((times < 1)); then
  echo "test:shaken: --times must be at least 1, got $times" >&2
  exit 2
fi

loops=()
tests=""
stop_load() {
  ((${#loops[@]} == 0)) && return 0
  kill "${loops[@]}" 2>/dev/null || true
  wait "${loops[@]}" 2>/dev/null || true
  loops=()
}
# A signal stops the load at once and goes on to the test run (its own process group, below), which
# stops as it would on its own Ctrl-C; then this script exits with the signal's status.
on_signal() {
  stop_load
  [[ -n "$tests" ]] && kill "-$1" -- "-$tests" 2>/dev/null && wait "$tests" 2>/dev/null
  exit "$2"
}
trap stop_load EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

owner=$$
for ((i = 0; i < load; i++)); do
  # Spins, and every ~0.1 s checks that this script still runs: a loop never outlives its owner.
  # Without this script's output (a reader of it, e.g. `| tee`, sees its end when it ends).
  nice -n "$nice" bash -c 'while kill -0 "$1" 2>/dev/null; do n=0; while ((n++ < 50000)); do :; done; done' \
    shaken-load "$owner" </dev/null >/dev/null 2>&1 &
  loops+=("$!")
done
echo "test:shaken: $load busy loops at nice $nice (pids ${loops[*]}) for $times run(s) of scripts/test.sh $*"

status=0
for ((run = 1; run <= times; run++)); do
  started=$SECONDS
  # In the background (a trapped signal interrupts `wait`, not a foreground command) and as a
  # process group of its own (setsid), so on_signal reaches vitest and its workers too.
  setsid bash scripts/test.sh "$@" &
  tests=$!
  wait "$tests" || status=$?
  tests=""
  took=$((SECONDS - started))
  printf 'test:shaken: run %d of %d %s in %d min %02d s\n' "$run" "$times" \
    "$([[ $status == 0 ]] && echo passed || echo "failed (exit $status)")" $((took / 60)) $((took % 60))
  ((status == 0)) || break
done
exit "$status"
