#!/usr/bin/env bash
# refactor_cost.sh -- instructions per request of two sluiced builds, under
# valgrind --tool=callgrind (instruction counts do not drift with machine load).
#
# For each build and each case a fresh daemon (--threads 1, a temp working
# directory, loopback ports) is started under callgrind; once it logs "ready"
# bench/refactor_load.py sends N requests on one connection, DEPTH in flight,
# then the daemon gets SIGTERM and callgrind's total Ir is read. An idle run
# (start, ready, SIGTERM, no request) is subtracted:
#   per request = (Ir(case) - Ir(idle)) / N
# Cases: resp-throttle (CL.THROTTLE k<i> 15 30 60), resp-check (SL.CHECK bench
# k<i>), http-check (GET /v1/check?policy=bench&key=k<i>) on the memory store,
# and redis-throttle (CL.THROTTLE against --store redis://127.0.0.1:REDIS_PORT,
# a redis-server started here with --save '' --appendonly no, flushed before
# every run; only sluiced's instructions are counted).
#
#   BEFORE=/work/wt-before/build/sluiced AFTER=build/sluiced bench/refactor_cost.sh
#
# Knobs: BEFORE, AFTER (sluiced binaries), BEFORE_YAML (lines added to the
# BEFORE build's configuration only: one binary, a setting on and off), AFTER_YAML
# (the same for the AFTER run), N (20000), DEPTH (16), CASES, KEEP (0;
# 1 keeps the callgrind files for callgrind_annotate),
# PORT (17390; PORT+1 for HTTP), REDIS_PORT (17379). A build whose --help
# lists --snapshot is given --snapshot off. Output: JSON lines, then a table.
# Not run by CTest (it takes minutes).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BEFORE=${BEFORE:?BEFORE=path of the old sluiced}
AFTER=${AFTER:-$ROOT/build/sluiced}
N=${N:-20000}
DEPTH=${DEPTH:-16}
CASES=${CASES:-"resp-throttle resp-check http-check redis-throttle"}
PORT=${PORT:-17390}
REDIS_PORT=${REDIS_PORT:-17379}
LOAD="$ROOT/bench/refactor_load.py"
OUT=$(mktemp -d /tmp/refactor-cost.XXXXXX)
cat >"$OUT/bench.yaml" <<YAML
policies:
  - name: bench
    limits: [{algorithm: token_bucket, limit: 1000000, period: 1s}]
YAML
{ cat "$OUT/bench.yaml"; printf '%s\n' "${BEFORE_YAML:-}"; } >"$OUT/bench-before.yaml"
{ cat "$OUT/bench.yaml"; printf '%s\n' "${AFTER_YAML:-}"; } >"$OUT/bench-after.yaml"

REDIS_PID=
cleanup() { [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null; }
trap cleanup EXIT
case " $CASES " in *" redis-"*)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$OUT" >"$OUT/redis.log" 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done ;;
esac

# run BIN TAG STORE MODE(or idle) -> prints total Ir
run() {
  local bin=$1 tag=$2 store=$3 mode=$4 dir extra=()
  local sk=; [ "$store" != memory ] && sk=redis.
  dir=$(mktemp -d "$OUT/$tag.$sk$mode.XXXX")
  "$bin" --help 2>&1 | grep -q -- '--snapshot' && extra+=(--snapshot off)
  [ "$store" != memory ] && extra+=(--store "$store")
  [ "$store" != memory ] && redis-cli -p "$REDIS_PORT" flushall >/dev/null
  ( cd "$dir" && exec valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
      --log-file="$dir/vg.log" "$bin" --config "$OUT/bench-$tag.yaml" \
      --resp "127.0.0.1:$PORT" --http "127.0.0.1:$((PORT + 1))" --threads 1 \
      "${extra[@]}" >"$dir/sluiced.log" 2>&1 ) &
  local pid=$!
  for _ in $(seq 600); do grep -q ' ready' "$dir/sluiced.log" 2>/dev/null && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if ! grep -q ' ready' "$dir/sluiced.log"; then echo "not ready: $dir" >&2; cat "$dir/sluiced.log" >&2; kill "$pid" 2>/dev/null; return 1; fi
  case $mode in
    idle) ;;
    http-*) python3 "$LOAD" "$mode" "$((PORT + 1))" "$N" "$DEPTH" >/dev/null || return 1 ;;
    *) python3 "$LOAD" "$mode" "$PORT" "$N" "$DEPTH" >/dev/null || return 1 ;;
  esac
  kill -TERM "$pid"; wait "$pid"
  grep -m1 '^summary:' "$dir/cg.out" | awk '{print $2}'
}

declare -A IR
for c in $CASES; do
  store=memory; mode=$c
  case $c in redis-*) store="redis://127.0.0.1:$REDIS_PORT"; mode="resp-${c#redis-}" ;; esac
  for tag in before after; do
    bin=$BEFORE; [ $tag = after ] && bin=$AFTER
    idle=${IR[$tag.$store.idle]:-}
    if [ -z "$idle" ]; then idle=$(run "$bin" "$tag" "$store" idle) || exit 1; IR[$tag.$store.idle]=$idle; fi
    tot=$(run "$bin" "$tag" "$store" "$mode") || exit 1
    per=$(( (tot - idle) / N ))
    IR[$tag.$c]=$per
    printf '{"case":"%s","build":"%s","n":%d,"depth":%d,"ir_total":%d,"ir_idle":%d,"ir_per_request":%d}\n' \
      "$c" "$tag" "$N" "$DEPTH" "$tot" "$idle" "$per"
  done
done

printf '\n%-16s %12s %12s %8s\n' case before after ratio
for c in $CASES; do
  b=${IR[before.$c]}; a=${IR[after.$c]}
  printf '%-16s %12d %12d %8.3f\n' "$c" "$b" "$a" "$(echo "$a / $b" | bc -l)"
done
if [ "${KEEP:-0}" = 1 ]; then echo "kept: $OUT" >&2; else rm -rf "$OUT"; fi
