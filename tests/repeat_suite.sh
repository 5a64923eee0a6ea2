#!/usr/bin/env bash
# Runs the README's test command (bash .ci/test) several times in a row, stopping at the first failure, to
# show that no test depends on the machine's speed or load. With --load, the runs share the machine with a
# CPU and I/O load made here, without extra packages: one busy loop per core and one process that writes,
# syncs, reads and deletes 256 MiB files in a loop on the same file system as the build.
#
#   bash tests/repeat_suite.sh RUNS [--load]
#
# Prints one line per run (its number, seconds, result) and the count at the end; exit status 0 only when
# every run passed. The logs of the runs are kept in build/repeat-N.log.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:?usage: tests/repeat_suite.sh RUNS [--load]}
load=${2:-}
pids=()
stop_load() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "${scratch:-}"; }
trap stop_load EXIT
if [ "$load" = "--load" ]; then
  for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    pids+=($!)
  done
  scratch=$(mktemp -d "$PWD/.repeat-load.XXXXXX")
  (while :; do
     dd if=/dev/urandom of="$scratch/f" bs=1M count=256 conv=fsync status=none
     cat "$scratch/f" > /dev/null
     rm -f "$scratch/f"
   done) &
  pids+=($!)
  echo "load: $(nproc) busy loops and one 256 MiB write+fsync/read loop"
fi
passed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  mkdir -p build
  if bash .ci/test > "build/repeat-$i.log" 2>&1; then
    passed=$((passed + 1))
    echo "run $i: passed in $(( $(date +%s) - start )) s"
  else
    echo "run $i: FAILED after $(( $(date +%s) - start )) s; the log is build/repeat-$i.log"
    grep -A3 "The following tests FAILED" "build/repeat-$i.log" || tail -20 "build/repeat-$i.log"
    echo "$passed passed, 1 failed"
    exit 1
  fi
done
echo "$passed passed, 0 failed"
