#!/usr/bin/env bash
# Run each fuzz target for a while: scripts/fuzz.sh FUZZTIME MINIMIZETIME pkg:Target…
# (MINIMIZETIME is -fuzzminimizetime: a duration, or a count such as 100x.)
# At the end it prints each run's last progress line: time, executions, new
# interesting inputs.
#
# Every target runs even when one fails, and the script fails at the end if
# any found something. A crasher is written by `go test` to the package's
# testdata/fuzz/<Target>/ (commit it with the fix: plain `go test` reruns it).
#
# Go 1.26's fuzz coordinator can end a duration-bound run with a bare
# "context deadline exceeded" and no failing input when a worker is still
# busy at the deadline (go.dev/issue/75804, fixed in Go 1.27). That is not a
# finding, so such a run counts as passed, with a note.
set -uo pipefail
fuzztime=$1 minimize=$2
shift 2
failed=()
summary=()
for t in "$@"; do
  pkg=${t%%:*} name=${t#*:}
  echo "== $name in $pkg for $fuzztime"
  log=$(mktemp)
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" -parallel "${FUZZ_PARALLEL:-1}" "$pkg" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # The last progress line, less its rate (Go prints 0/sec at the end).
  last=$(grep -E '^fuzz: elapsed: .*execs:' "$log" | tail -1 | sed -E 's| \([0-9]+/sec\)||')
  crash=$(grep -Eo 'Failing input written to [^ ]+' "$log" | tail -1)
  summary+=("$name ($pkg): ${last#fuzz: }${crash:+; $crash}")
  if [ "$rc" -ne 0 ]; then
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "note: $name ended with Go's fuzztime deadline race (go.dev/issue/75804), no failing input: not a finding"
    else
      failed+=("$pkg:$name")
    fi
  fi
  rm -f "$log"
done
echo "== summary (the last progress line of each run)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found failures in: ${failed[*]}" >&2
  exit 1
fi
