#!/bin/sh
# test_stages.sh SOURCE_DIR -- scripts/test-stages.sh, the reporter of
# `make test`, on stand-in stages: a failed first stage must not keep the
# others from running, each stage gets its line, the closing line counts
# stages, and the exit status says one failed.
set -eu
src=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "stages: $*" >&2; cat "$dir/out" >&2; exit 1; }
# a stand-in for make: each goal prints a ctest-like closing line, notes that
# it ran, and the release stage fails
cat >"$dir/make" <<'MAKE'
#!/bin/sh
goal=$2
echo "$goal" >>"$(dirname "$0")/ran"
case $goal in
  test-release) echo "97% tests passed, 1 tests failed out of 34"; exit 2 ;;
  test-asan) echo "100% tests passed, 0 tests failed out of 33" ;;
  fuzz) echo "100% tests passed, 0 tests failed out of 7" ;;
esac
MAKE
chmod +x "$dir/make"
rc=0
MAKE="$dir/make" sh "$src/scripts/test-stages.sh" release asan fuzz >"$dir/out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "exit status 0 though the release stage failed"
[ "$(tr '\n' ' ' <"$dir/ran")" = "test-release test-asan fuzz " ] || fail "not every stage ran: $(cat "$dir/ran")"
grep -Eq '^stage release: failed \(34 tests, 1 failed, [0-9]+ s; exit status 2\)$' "$dir/out" || fail "no failed line for release"
grep -Eq '^stage asan: passed \(33 tests, [0-9]+ s\)$' "$dir/out" || fail "no passed line for asan"
grep -Eq '^stage fuzz: passed \(7 tests, [0-9]+ s\)$' "$dir/out" || fail "no passed line for fuzz"
[ "$(tail -1 "$dir/out")" = "2 passed, 1 failed" ] || fail "closing line is '$(tail -1 "$dir/out")'"

# all passing: exit 0
sed -i 's/exit 2 ;;/;;/; s/97% tests passed, 1 tests failed/100% tests passed, 0 tests failed/' "$dir/make"
MAKE="$dir/make" sh "$src/scripts/test-stages.sh" release asan fuzz >"$dir/out" 2>&1 || fail "exit status $? though every stage passed"
[ "$(tail -1 "$dir/out")" = "3 passed, 0 failed" ] || fail "closing line is '$(tail -1 "$dir/out")'"
echo "stages: every stage runs, one line each, closing count and exit status right"
