#!/usr/bin/env bash
# resp_vs_redis.sh -- sluiced's RESP front against Redis, in one run.
#
# redis-benchmark (CLIENTS clients, pipelines PIPELINES, KEYSPACE random keys
# and one hot key) drives, with the same settings:
#   redis-server   PING (the ceiling of a RESP server) and the peer kit's GCRA
#                  Lua script through EVALSHA (what Redis + Lua users run);
#   sluiced        PING and CL.THROTTLE with the same limit, with 1 and with
#                  2 worker threads.
# Every case runs RUNS times for about DUR seconds; the median is reported
# with its spread. Output: JSON lines, then a table with the ratios.
# Servers are started and stopped here (by PID, loopback only), with the
# peer kit's helpers (../../shared/bench/peers/common.sh).
#
#   bench/resp_vs_redis.sh                  # everything (~8 min)
#   RUNS=5 PIN=1 bench/resp_vs_redis.sh     # PIN=1: servers on CPU 0, client on CPU 1
#
# Knobs: RUNS (3), DUR (5), CLIENTS (50), PIPELINES ("1 16"), KEYSPACE
# (100000), PIN (0), THREADS ("1 2"), SLUICED (build/sluiced), MIN_REQUESTS
# (100000: the fewest commands a run sends, and the probe's size at P=1,
# four times it at P>1; lower it on a loaded machine, where 100,000 PINGs
# take half a minute),
# REDIS_PORT (16379), SLUICED_PORT (16390).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
# shellcheck source=/dev/null
source "$PEERS/common.sh"
# shellcheck source=bench/resp_lib.sh
source "$ROOT/bench/resp_lib.sh"

DUR=${DUR:-5}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
KEYSPACE=${KEYSPACE:-100000}
PIN=${PIN:-0}
THREADS=${THREADS:-"1 2"}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
MIN_REQUESTS=${MIN_REQUESTS:-100000}
REDIS_PORT=${REDIS_PORT:-16379}
SLUICED_PORT=${SLUICED_PORT:-16390}
OUT=$(mktemp -d /tmp/resp-vs-redis.XXXXXX)

SRV_PIN=(); CLI_PIN=()
if [ "$PIN" = 1 ]; then SRV_PIN=(taskset -c 0); CLI_PIN=(taskset -c 1); fi

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }

# rb PORT PIPELINE N ARGS... -> "rps avg min p50 p95 p99 max"
rb() {
  local port=$1 p=$2 n=$3; shift 3
  "${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P "$p" -n "$n" \
    -r "$KEYSPACE" --csv "$@" 2>/dev/null | awk -F, 'NR==2{gsub(/"/,""); print $2, $3, $4, $5, $6, $7, $8}'
}

# measure SERVER THREADS CASE PORT PIPELINE ARGS...: one JSON line
measure() {
  local server=$1 threads=$2 name=$3 port=$4 p=$5; shift 5
  local probe; probe=$(rb "$port" "$p" $(( p == 1 ? MIN_REQUESTS : 4 * MIN_REQUESTS )) "$@")
  local n; n=$(awk -v r="${probe%% *}" -v d="$DUR" -v m="$MIN_REQUESTS" 'BEGIN{n=int(r*d); if(n<m)n=m; print n}')
  local rps=() p50=() p99=() i line r avg mn q50 q95 q99 mx
  for i in $(seq "$RUNS"); do
    line=$(rb "$port" "$p" "$n" "$@")
    read -r r avg mn q50 q95 q99 mx <<<"$line"
    rps+=("$r"); p50+=("$q50"); p99+=("$q99")
  done
  local s_rps s_p50 s_p99
  s_rps=$(printf '%s\n' "${rps[@]}" | stats)
  s_p50=$(printf '%s\n' "${p50[@]}" | stats)
  s_p99=$(printf '%s\n' "${p99[@]}" | stats)
  read -r m lo hi <<<"$s_rps"
  read -r m50 _ _ <<<"$s_p50"
  read -r m99 _ _ <<<"$s_p99"
  printf '{"bench":"resp","server":"%s","threads":%s,"case":"%s","clients":%s,"pipeline":%s,"ops_per_sec":%s,"ops_min":%s,"ops_max":%s,"p50_ms":%s,"p99_ms":%s,"runs":%s,"requests":%s}\n' \
    "$server" "$threads" "$name" "$CLIENTS" "$p" "$m" "$lo" "$hi" "$m50" "$m99" "$RUNS" "$n" | tee -a "$OUT/lines"
}

resp_bench_yaml "$OUT/sluice.yaml" "$SLUICED_PORT"

port_free "$REDIS_PORT" || exit 1
port_free "$SLUICED_PORT" || exit 1
start_bench_redis "$OUT" "$REDIS_PORT" || exit 1
SHA=$(redis-cli -p "$REDIS_PORT" SCRIPT LOAD "$(cat "$PEERS/lua/gcra.lua")")

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; pin=$PIN clients=$CLIENTS keyspace=$KEYSPACE runs=$RUNS dur=${DUR}s"
  echo "# where: $([ "$PIN" = 1 ] && echo "servers on CPU 0, redis-benchmark on CPU 1" || echo "nothing pinned")"
  echo "# load average at the start:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"
  echo "# $(redis-server --version | cut -d' ' -f1-3); $("$SLUICED" --version); $(redis-benchmark --version 2>/dev/null | head -1)"
  echo "# the same limit everywhere: 100 per second with a burst of 100 (Lua: burst 100, rate 100, period 1;"
  echo "# CL.THROTTLE: max_burst 99 = capacity 100, 100 per 1 s)"
} | tee "$OUT/header"

for p in $PIPELINES; do
  redis-cli -p "$REDIS_PORT" FLUSHALL >/dev/null
  measure redis 1 PING "$REDIS_PORT" "$p" PING
  measure redis 1 gcra-lua/spread "$REDIS_PORT" "$p" EVALSHA "$SHA" 1 "rl:__rand_int__" 100 100 1 1
  redis-cli -p "$REDIS_PORT" FLUSHALL >/dev/null
  measure redis 1 gcra-lua/hot "$REDIS_PORT" "$p" EVALSHA "$SHA" 1 "rl:hot" 100 100 1 1
done
stop_named redis

for t in $THREADS; do
  start_bg sluiced "$OUT/sluiced-$t.log" "${SRV_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads "$t"
  wait_port 127.0.0.1 "$SLUICED_PORT" || exit 1
  for p in $PIPELINES; do
    measure sluiced "$t" PING "$SLUICED_PORT" "$p" PING
    measure sluiced "$t" cl.throttle/spread "$SLUICED_PORT" "$p" CL.THROTTLE "rl:__rand_int__" 99 100 1
    measure sluiced "$t" cl.throttle/hot "$SLUICED_PORT" "$p" CL.THROTTLE "rl:hot" 99 100 1
  done
  stop_named sluiced
done

echo
awk -F'[:,{}"]+' '
  { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
    key = v["server"] "|" v["threads"] "|" v["case"] "|" v["pipeline"]
    ops[key] = v["ops_per_sec"]; p99[key] = v["p99_ms"]; p50[key] = v["p50_ms"]
    lo[key] = v["ops_min"]; hi[key] = v["ops_max"]; order[++n] = key }
  END {
    printf "%-8s %3s %-20s %3s %12s %22s %9s %9s %10s %10s\n", "server", "thr", "case", "P", "ops/s", "[min..max]", "p50 ms", "p99 ms", "/PING", "/Lua gcra"
    for (k = 1; k <= n; k++) {
      split(order[k], f, "|")
      ping = ops["redis|1|PING|" f[4]]; lua = ops["redis|1|gcra-lua/" (f[3] ~ /hot/ ? "hot" : "spread") "|" f[4]]
      printf "%-8s %3s %-20s %3s %12d %22s %9s %9s %10s %10s\n", f[1], f[2], f[3], f[4], ops[order[k]],
        "[" lo[order[k]] ".." hi[order[k]] "]", p50[order[k]], p99[order[k]],
        (f[1] == "sluiced" && ping > 0) ? sprintf("%.2fx", ops[order[k]] / ping) : "",
        (f[3] ~ /cl.throttle/ && lua > 0) ? sprintf("%.2fx", ops[order[k]] / lua) : "" }
  }' "$OUT/lines"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# raw: $OUT"
