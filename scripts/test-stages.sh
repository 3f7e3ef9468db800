#!/bin/sh
# test-stages.sh STAGE... -- runs each test stage (`make test-STAGE`, or
# `make fuzz` for fuzz) to its end whatever the others did, then prints one
# line per stage and a closing "N passed, N failed" counting stages. Exits
# non-zero if any stage failed. Only the reporting lives here; what a stage
# builds and runs is in the Makefile.
set -u
MAKE=${MAKE:-make}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT INT TERM
summary=""
passed=0
failed=0
for stage in "$@"; do
  case "$stage" in
    fuzz) goal=fuzz ;;
    *) goal=test-$stage ;;
  esac
  echo "=== stage $stage: make $goal"
  start=$(date +%s)
  # the output goes to the terminal as it comes and to a log for the count;
  # the stage's own status travels through a file past the pipe
  { $MAKE --no-print-directory "$goal"; echo $? >"$logs/$stage.rc"; } 2>&1 | tee "$logs/$stage.log"
  rc=$(cat "$logs/$stage.rc" 2>/dev/null || echo 1)
  secs=$(( $(date +%s) - start ))
  # ctest's closing line: "100% tests passed, 0 tests failed out of 34"
  total=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1 \2/p' "$logs/$stage.log" |
          awk '{f += $1; n += $2} END {if (NR) printf "%d tests%s", n, f ? sprintf(", %d failed", f) : ""}')
  [ -n "$total" ] || total="no tests run"
  if [ "$rc" = 0 ]; then
    line="stage $stage: passed ($total, $secs s)"
    passed=$((passed + 1))
  else
    line="stage $stage: failed ($total, $secs s; exit status $rc)"
    failed=$((failed + 1))
  fi
  echo "$line"
  summary="$summary$line
"
done
echo
echo "=== summary"
printf '%s' "$summary"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
