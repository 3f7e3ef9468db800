#!/usr/bin/env bash
# refactor_wall.sh -- wall-clock throughput of two sluiced builds, interleaved
# (before, after, before, after, ...) so that drifting machine load hits both.
#
# Each round starts a fresh daemon per build (--threads 1, temp working
# directory, loopback) and measures, one after the other:
#   resp    redis-benchmark -c CLIENTS -P PIPE -r KEYSPACE -n REQS
#           CL.THROTTLE key:__rand_int__ 15 30 60
#   check   the same with SL.CHECK bench key:__rand_int__
#   http    wrk -t1 -c CONNS -d DUR GET /v1/check?policy=bench&key=<random>
#   redis   the resp case against a daemon with --store redis://127.0.0.1:REDIS_PORT
#           (a redis-server started here, --save '' --appendonly no)
# No CPU pinning. Output: JSON lines (one per round, build and case), then the
# median requests/s per build and case, the spread (min-max) and the ratio
# after/before of the medians.
#
#   BEFORE=/work/wt-before/build/sluiced AFTER=build/sluiced RUNS=5 bench/refactor_wall.sh
#
# Knobs: BEFORE, AFTER, RUNS (5), REQS (200000), CLIENTS (4), PIPE (16),
# KEYSPACE (100000; redis-benchmark -r), CONNS (16),
# DUR (3), CASES ("resp http redis"), PORT (17490; PORT+1 HTTP), REDIS_PORT (17479).
# Not run by CTest.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BEFORE=${BEFORE:?BEFORE=path of the old sluiced}
AFTER=${AFTER:-$ROOT/build/sluiced}
RUNS=${RUNS:-5}; REQS=${REQS:-200000}; CLIENTS=${CLIENTS:-4}; CONNS=${CONNS:-16}; DUR=${DUR:-3}
PIPE=${PIPE:-16}; KEYSPACE=${KEYSPACE:-100000}
CASES=${CASES:-"resp http redis"}
PORT=${PORT:-17490}; REDIS_PORT=${REDIS_PORT:-17479}
OUT=$(mktemp -d /tmp/refactor-wall.XXXXXX)
cat >"$OUT/bench.yaml" <<YAML
policies:
  - name: bench
    limits: [{algorithm: token_bucket, limit: 1000000, period: 1s}]
YAML
cat >"$OUT/key.lua" <<'LUA'
function init(args) math.randomseed(os.time()) end
function request() return wrk.format(nil, wrk.path .. "&key=" .. tostring(math.random(100000))) end
LUA
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT" >"$OUT/redis.log" 2>&1 &
REDIS_PID=$!
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; kill "$REDIS_PID" 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

start() {  # BIN [--store URL]
  local bin=$1; shift
  local dir extra=()
  dir=$(mktemp -d "$OUT/run.XXXX")
  "$bin" --help 2>&1 | grep -q -- '--snapshot' && extra+=(--snapshot off)
  ( cd "$dir" && exec "$bin" --config "$OUT/bench.yaml" --resp "127.0.0.1:$PORT" \
      --http "127.0.0.1:$((PORT + 1))" --threads 1 "${extra[@]}" "$@" >"$dir/log" 2>&1 ) &
  SPID=$!
  for _ in $(seq 100); do grep -q ' ready' "$dir/log" && return 0; sleep 0.05; done
  echo "not ready" >&2; cat "$dir/log" >&2; exit 1
}
stop() { kill -TERM "$SPID"; wait "$SPID" 2>/dev/null; SPID=; }
rb() { redis-benchmark -p "$PORT" -c "$CLIENTS" -P "$PIPE" -r "$KEYSPACE" -n "$REQS" --csv \
         CL.THROTTLE key:__rand_int__ 15 30 60 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'; }
rbc() { redis-benchmark -p "$PORT" -c "$CLIENTS" -P "$PIPE" -r "$KEYSPACE" -n "$REQS" --csv \
         SL.CHECK bench key:__rand_int__ 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'; }
wk() { wrk -t1 -c "$CONNS" -d "${DUR}s" -s "$OUT/key.lua" \
         "http://127.0.0.1:$((PORT + 1))/v1/check?policy=bench" | awk '/Requests\/sec/ {print $2}'; }

declare -A R
for r in $(seq "$RUNS"); do
  for tag in before after; do
    bin=$BEFORE; [ $tag = after ] && bin=$AFTER
    for c in $CASES; do
      case $c in
        resp) start "$bin"; v=$(rb) ;;
        check) start "$bin"; v=$(rbc) ;;
        http) start "$bin"; v=$(wk) ;;
        redis) redis-cli -p "$REDIS_PORT" flushall >/dev/null
               start "$bin" --store "redis://127.0.0.1:$REDIS_PORT"; v=$(rb) ;;
      esac
      stop
      R[$tag.$c]="${R[$tag.$c]:-} $v"
      printf '{"round":%d,"build":"%s","case":"%s","rps":%s}\n' "$r" "$tag" "$c" "$v"
    done
  done
done

med() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f %.0f %.0f", m, a[1], a[NR]}'; }
printf '\n%-6s %24s %24s %8s\n' case "before rps (min-max)" "after rps (min-max)" ratio
for c in $CASES; do
  read -r bm bl bh <<<"$(echo "${R[before.$c]}" | med)"
  read -r am al ah <<<"$(echo "${R[after.$c]}" | med)"
  printf '%-6s %8s (%6s-%6s) %8s (%6s-%6s) %8.3f\n' "$c" "$bm" "$bl" "$bh" "$am" "$al" "$ah" "$(echo "$am / $bm" | bc -l)"
done
rm -rf "$OUT"
