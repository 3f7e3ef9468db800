#!/usr/bin/env bash
# redis_store_vs_lua.sh -- sluiced on the Redis store against clients that
# call a Lua limiter on Redis themselves, in one run.
#
# CLIENTS concurrent clients (redis-benchmark -c, pipeline 1: each client
# waits for its answer, as an application does), KEYSPACE random keys:
#   direct    the clients call the peer kit's GCRA script on redis-server
#             with EVALSHA (what Redis + Lua users run today);
#   sluiced   the same clients send CL.THROTTLE (same limit) to sluiced,
#             whose store is the same redis-server (store.sync strict):
#             each decision is one EVALSHA of sluice's evaluation script,
#             pipelined per worker with the others in flight;
#   sluiced-wb  the same clients send SL.CHECK of the same limit to sluiced
#             with store.sync write_back (decided in its memory, merged into
#             the same redis-server every 10 ms; CL.THROTTLE stays strict).
# Then Redis memory per key for each algorithm through sluiced, against the
# peer kit's figures for its plain Lua scripts (a_redis.sh memory).
# Every case runs RUNS times for about DUR seconds; the median is reported
# with its spread, and Redis's own CPU time per decision (INFO cpu): the
# "capacity" column is how many more decisions one Redis serves through
# sluiced than called directly. Output: JSON lines, then a table.
#
#   bench/redis_store_vs_lua.sh                 # everything (~4 min)
#   PIN=1 bench/redis_store_vs_lua.sh           # redis on CPU 0, sluiced and client on CPU 1
#
# Redis's own figures for each case too (INFO commandstats, reset before
# each run): its script calls per decision and usec_per_call of EVALSHA,
# so that the time per decision can be split into per call and per key.
#
# Knobs: RUNS (3), DUR (5), CLIENTS (64), KEYSPACE (100000), PIN (0),
# THREADS ("1 2"), MODES ("strict write_back": which sluiced cases),
# MEMORY (1: the memory per key part; 0 skips it), MEMKEYS (100000),
# SLUICED (build/sluiced), REDIS_PORT (16379), SLUICED_PORT (16390).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
# shellcheck source=/dev/null
source "$PEERS/common.sh"

DUR=${DUR:-5}
CLIENTS=${CLIENTS:-64}
KEYSPACE=${KEYSPACE:-100000}
PIN=${PIN:-0}
THREADS=${THREADS:-"1 2"}
MODES=${MODES:-"strict write_back"}
MEMORY=${MEMORY:-1}
MEMKEYS=${MEMKEYS:-100000}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
REDIS_PORT=${REDIS_PORT:-16379}
SLUICED_PORT=${SLUICED_PORT:-16390}
OUT=$(mktemp -d /tmp/redis-store-vs-lua.XXXXXX)

REDIS_PIN=(); OTHER_PIN=()
if [ "$PIN" = 1 ]; then REDIS_PIN=(taskset -c 0); OTHER_PIN=(taskset -c 1); fi

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }

# rb PORT N ARGS... -> "rps avg min p50 p95 p99 max". A server that died
# stops the whole run: redis-benchmark would otherwise spin on its port.
rb() {
  local port=$1 n=$2; shift 2
  redis-cli -p "$port" PING >/dev/null 2>&1 || { echo "server on port $port is gone; see $OUT" >&2; exit 1; }
  timeout $((DUR * 20 + 60)) "${OTHER_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P 1 -n "$n" \
    -r "$KEYSPACE" --csv "$@" 2>/dev/null | awk -F, 'NR==2{gsub(/"/,""); print $2, $3, $4, $5, $6, $7, $8}'
}

# Redis's own CPU time so far, in microseconds (user + system).
redis_cpu_us() {
  redis-cli -p "$REDIS_PORT" INFO cpu | awk -F: '/^used_cpu_(user|sys):/{gsub(/\r/,"",$2); t += $2} END{printf "%d", t * 1e6}'
}

# EVALSHA's calls and microseconds since the last CONFIG RESETSTAT.
evalsha_stats() {
  redis-cli -p "$REDIS_PORT" INFO commandstats | awk -F'[:=,]' '/^cmdstat_evalsha:/{print $3, $5; f=1} END{if(!f) print 0, 0}'
}

# measure SERVER THREADS CASE PORT ARGS...: one JSON line. redis_us is
# Redis's CPU per decision: what a shared Redis spends on each, the figure
# that says how many decisions one Redis can serve when it is the limit.
measure() {
  local server=$1 threads=$2 name=$3 port=$4; shift 4
  local probe; probe=$(rb "$port" 50000 "$@")
  [ -n "$probe" ] || { echo "no figures from port $port; stopping" >&2; exit 1; }
  local n; n=$(awk -v r="${probe%% *}" -v d="$DUR" 'BEGIN{n=int(r*d); if(n<50000)n=50000; print n}')
  local rps=() p50=() p99=() cpu=() cpc=() upc=() i line r avg mn q50 q95 q99 mx c0 c1 calls usec
  for i in $(seq "$RUNS"); do
    redis-cli -p "$REDIS_PORT" CONFIG RESETSTAT >/dev/null
    c0=$(redis_cpu_us)
    line=$(rb "$port" "$n" "$@")
    [ -n "$line" ] || { echo "no figures from port $port; stopping" >&2; exit 1; }
    c1=$(redis_cpu_us)
    read -r calls usec <<<"$(evalsha_stats)"
    read -r r avg mn q50 q95 q99 mx <<<"$line"
    rps+=("$r"); p50+=("$q50"); p99+=("$q99")
    cpu+=("$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN{printf "%.2f", (b - a) / n}')")
    cpc+=("$(awk -v c="$calls" -v n="$n" 'BEGIN{printf "%.3f", c / n}')")
    upc+=("$(awk -v c="$calls" -v u="$usec" 'BEGIN{printf "%.2f", c ? u / c : 0}')")
  done
  local m lo hi m50 m99 mcpu mcpc mupc
  read -r m lo hi <<<"$(printf '%s\n' "${rps[@]}" | stats)"
  read -r m50 _ _ <<<"$(printf '%s\n' "${p50[@]}" | stats)"
  read -r m99 _ _ <<<"$(printf '%s\n' "${p99[@]}" | stats)"
  read -r mcpu _ _ <<<"$(printf '%s\n' "${cpu[@]}" | stats)"
  read -r mcpc _ _ <<<"$(printf '%s\n' "${cpc[@]}" | stats)"
  read -r mupc _ _ <<<"$(printf '%s\n' "${upc[@]}" | stats)"
  printf '{"bench":"redis_store","server":"%s","threads":%s,"case":"%s","clients":%s,"ops_per_sec":%s,"ops_min":%s,"ops_max":%s,"p50_ms":%s,"p99_ms":%s,"redis_us":%s,"evalsha_per_decision":%s,"evalsha_usec_per_call":%s,"runs":%s,"requests":%s}\n' \
    "$server" "$threads" "$name" "$CLIENTS" "$m" "$lo" "$hi" "$m50" "$m99" "$mcpu" "$mcpc" "$mupc" "$RUNS" "$n" | tee -a "$OUT/lines"
}

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
used_mem() { rcli INFO memory | awk -F: '/^used_memory:/{gsub(/\r/,"",$2); print $2}'; }

port_free "$REDIS_PORT" || exit 1
port_free "$SLUICED_PORT" || exit 1
start_bg redis "$OUT/redis.log" "${REDIS_PIN[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
  --save "" --appendonly no --daemonize no --dir "$OUT" --protected-mode yes
wait_port 127.0.0.1 "$REDIS_PORT" || exit 1
SHA=$(rcli SCRIPT LOAD "$(cat "$PEERS/lua/gcra.lua")")

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; pin=$PIN clients=$CLIENTS keyspace=$KEYSPACE runs=$RUNS dur=${DUR}s"
  echo "# $(redis-server --version | cut -d' ' -f1-3); $("$SLUICED" --version); $(redis-benchmark --version 2>/dev/null | head -1)"
  echo "# the same limit everywhere: 100 per second, burst 100 (Lua: burst 100 rate 100 period 1; CL.THROTTLE: max_burst 99, 100 per 1 s)"
} | tee "$OUT/header"

rcli FLUSHALL >/dev/null
measure direct 0 gcra-lua/spread "$REDIS_PORT" EVALSHA "$SHA" 1 "rl:__rand_int__" 100 100 1 1
rcli FLUSHALL >/dev/null
measure direct 0 gcra-lua/hot "$REDIS_PORT" EVALSHA "$SHA" 1 "rl:hot" 100 100 1 1

for t in $THREADS; do
  cat >"$OUT/sluice-$t.yaml" <<EOF
listen: {resp: 127.0.0.1:$SLUICED_PORT, http: off}
limits: {max_connections: 1000}
store: {type: redis, url: "redis://127.0.0.1:$REDIS_PORT", timeout: 1s}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 100, period: 1s, burst: 99}]
EOF
  if [[ " $MODES " == *" strict "* ]]; then
  rcli FLUSHALL >/dev/null
  start_bg sluiced "$OUT/sluiced-$t.log" "${OTHER_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice-$t.yaml" --threads "$t"
  wait_port 127.0.0.1 "$SLUICED_PORT" || exit 1
  measure sluiced "$t" cl.throttle/spread "$SLUICED_PORT" CL.THROTTLE "rl:__rand_int__" 99 100 1
  rcli FLUSHALL >/dev/null
  measure sluiced "$t" cl.throttle/hot "$SLUICED_PORT" CL.THROTTLE "rl:hot" 99 100 1
  stop_named sluiced
  fi
  [[ " $MODES " == *" write_back "* ]] || continue
  sed 's/timeout: 1s}/timeout: 1s, sync: write_back, sync_interval: 10ms}/' "$OUT/sluice-$t.yaml" >"$OUT/sluice-wb-$t.yaml"
  rcli FLUSHALL >/dev/null
  start_bg sluiced "$OUT/sluiced-wb-$t.log" "${OTHER_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice-wb-$t.yaml" --threads "$t"
  wait_port 127.0.0.1 "$SLUICED_PORT" || exit 1
  measure sluiced-wb "$t" sl.check/spread "$SLUICED_PORT" SL.CHECK bench "rl:__rand_int__"
  rcli FLUSHALL >/dev/null
  measure sluiced-wb "$t" sl.check/hot "$SLUICED_PORT" SL.CHECK bench "rl:hot"
  stop_named sluiced
done

# Memory per key: MEMKEYS distinct keys through sluiced, long windows so
# nothing expires while measuring; used_memory delta / DBSIZE.
cat >"$OUT/sluice-mem.yaml" <<EOF
listen: {resp: 127.0.0.1:$SLUICED_PORT, http: off}
store: {type: redis, url: "redis://127.0.0.1:$REDIS_PORT", timeout: 2s}
policies:
  - {name: gcra, limits: [{algorithm: gcra, limit: 100, period: 1d, burst: 99}]}
  - {name: token_bucket, limits: [{algorithm: token_bucket, limit: 100, period: 1d}]}
  - {name: leaky_bucket, limits: [{algorithm: leaky_bucket, limit: 100, period: 1d}]}
  - {name: fixed_window, limits: [{algorithm: fixed_window, limit: 100, period: 1d}]}
  - {name: sliding_window, limits: [{algorithm: sliding_window, limit: 100, period: 1d}]}
  - {name: sliding_log, limits: [{algorithm: sliding_log, limit: 100, period: 1d}]}
EOF
sed 's/timeout: 2s}/timeout: 2s, sync: write_back}/' "$OUT/sluice-mem.yaml" >"$OUT/sluice-mem-wb.yaml"
[ "$MEMORY" = 1 ] || MODES=""
for mode in $MODES; do
  cfg="$OUT/sluice-mem.yaml"; [ "$mode" = write_back ] && cfg="$OUT/sluice-mem-wb.yaml"
  start_bg sluiced "$OUT/sluiced-mem-$mode.log" "$SLUICED" --snapshot off --config "$cfg" --threads 2
  wait_port 127.0.0.1 "$SLUICED_PORT" || exit 1
  for alg in gcra token_bucket leaky_bucket fixed_window sliding_window sliding_log; do
    for per_key in 1 100; do
      [ "$alg" != sliding_log ] && [ "$per_key" = 100 ] && continue
      rcli FLUSHALL >/dev/null; rcli MEMORY PURGE >/dev/null; sleep 0.3
      before=$(used_mem)
      awk -v n="$MEMKEYS" -v a="$alg" -v r="$per_key" 'BEGIN{for(i=0;i<n;i++) for(j=0;j<r;j++) printf "SL.CHECK %s k:%d\r\n", a, i}' \
        | redis-cli -p "$SLUICED_PORT" --pipe >/dev/null 2>&1
      # write-back shares every 10 ms: wait until Redis has every key
      for _ in $(seq 200); do [ "$(rcli DBSIZE)" -ge "$MEMKEYS" ] && break; sleep 0.05; done
      after=$(used_mem); keys=$(rcli DBSIZE)
      printf '{"bench":"redis_memory","mode":"%s","algorithm":"%s","entries_per_key":%s,"keys":%s,"used_memory_delta":%s,"bytes_per_key":%.1f}\n' \
        "$mode" "$alg" "$per_key" "$keys" "$((after - before))" "$(awk -v d=$((after - before)) -v k="$keys" 'BEGIN{print (k ? d / k : 0)}')" \
        | tee -a "$OUT/lines"
    done
  done
  stop_named sluiced
done
stop_named redis

echo
awk -F'[:,{}"]+' '
  { delete v; for (i = 2; i < NF; i += 2) v[$i] = $(i + 1) }
  v["bench"] == "redis_store" {
    key = v["server"] "|" v["threads"] "|" v["case"]
    ops[key] = v["ops_per_sec"]; p99[key] = v["p99_ms"]; p50[key] = v["p50_ms"]; rus[key] = v["redis_us"]
    lo[key] = v["ops_min"]; hi[key] = v["ops_max"]; order[++n] = key
    cpc[key] = v["evalsha_per_decision"]; upc[key] = v["evalsha_usec_per_call"] }
  v["bench"] == "redis_memory" { mem[++m] = sprintf("%-10s %-16s %4s entries/key %12.1f B/key", v["mode"], v["algorithm"], v["entries_per_key"], v["bytes_per_key"]) }
  END {
    printf "%-10s %3s %-20s %12s %22s %9s %9s %12s %12s %12s %10s %10s\n", "server", "thr", "case", "ops/s", "[min..max]", "p50 ms", "p99 ms", "/direct Lua", "Redis us/op", "capacity", "calls/op", "us/call"
    for (k = 1; k <= n; k++) {
      split(order[k], f, "|")
      d = "direct|0|gcra-lua/" (f[3] ~ /hot/ ? "hot" : "spread")
      lua = ops[d]
      printf "%-10s %3s %-20s %12d %22s %9s %9s %12s %12s %12s %10s %10s\n", f[1], f[2], f[3], ops[order[k]],
        "[" lo[order[k]] ".." hi[order[k]] "]", p50[order[k]], p99[order[k]],
        (f[1] ~ /^sluiced/ && lua > 0) ? sprintf("%.2fx", ops[order[k]] / lua) : "", rus[order[k]],
        (f[1] ~ /^sluiced/ && rus[order[k]] > 0) ? sprintf("%.2fx", rus[d] / rus[order[k]]) : "", cpc[order[k]], upc[order[k]] }
    print ""
    for (k = 1; k <= m; k++) print mem[k]
  }' "$OUT/lines"
echo "# raw: $OUT"
