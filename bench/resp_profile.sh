#!/usr/bin/env bash
# resp_profile.sh -- what one RESP command costs the server, counted rather
# than timed: user-space instructions per command (callgrind) and system
# calls per command (strace -c -f), and data cache misses per command
# (callgrind's cache simulation: D1 and last-level read and write misses), for redis-server answering PING and
# sluiced (one worker thread) answering PING and CL.THROTTLE, under the same
# redis-benchmark load as bench/resp_vs_redis.sh (CLIENTS clients, KEYSPACE
# random keys). Counts are stable on a loaded machine where wall time is not.
#
# Each case: start the server, warm it with WARM commands (connections,
# every key of the keyspace in the table), then count N commands only
# (callgrind_control -i on/off; strace attached for that run alone).
#
#   bench/resp_profile.sh                       # both pipelines, ~4 min
#   PIPELINES=1 MODES=strace bench/resp_profile.sh
#
# Knobs: PIPELINES ("1 16"), MODES ("callgrind strace"; "cachesim" too), CLIENTS (50),
# KEYSPACE (100000), N16 (200000), N1 (50000), WARM (400000),
# SLUICED (build/sluiced), PORT (16392). Needs valgrind and strace.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PIPELINES=${PIPELINES:-"1 16"}
MODES=${MODES:-"callgrind strace"}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-100000}
N16=${N16:-200000}
N1=${N1:-50000}
WARM=${WARM:-400000}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
PORT=${PORT:-16392}
OUT=$(mktemp -d /tmp/resp-profile.XXXXXX)

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "127.0.0.1:$PORT is already in use" >&2; exit 1
fi

cat >"$OUT/sluice.yaml" <<EOF
listen: {resp: 127.0.0.1:$PORT, http: off}
limits: {max_connections: 1000}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 100, period: 1s, burst: 99}]
EOF

SERVER_PID=
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=
}
trap stop_server EXIT

# start SERVER [WRAPPER...]: redis-server or sluiced --threads 1 on PORT
start() {
  local server=$1; shift
  if [ "$server" = redis ]; then
    "$@" redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT" \
      >"$OUT/server.log" 2>&1 &
  else
    "$@" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads 1 >"$OUT/server.log" 2>&1 &
  fi
  SERVER_PID=$!
  local i
  for i in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$server did not open $PORT" >&2; exit 1
}

rb() { # rb P N ARGS...
  local p=$1 n=$2; shift 2
  redis-benchmark -h 127.0.0.1 -p "$PORT" -c "$CLIENTS" -P "$p" -n "$n" -r "$KEYSPACE" "$@" >/dev/null 2>&1
}

# run_callgrind SERVER CASE P ARGS...: one JSON line
run_callgrind() {
  local server=$1 name=$2 p=$3; shift 3
  local n=$(( p == 1 ? N1 : N16 )) f="$OUT/cg.$server.$p.${name//\//-}"
  start "$server" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$f"
  rb "$p" "$WARM" "$@"
  callgrind_control -i on "$SERVER_PID" >/dev/null 2>&1
  rb "$p" "$n" "$@"
  callgrind_control -i off "$SERVER_PID" >/dev/null 2>&1
  stop_server
  local ir
  ir=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",", "", $1); print $1}')
  printf '{"bench":"resp_profile","tool":"callgrind","server":"%s","case":"%s","pipeline":%s,"commands":%s,"instructions_per_command":%d,"file":"%s"}\n' \
    "$server" "$name" "$p" "$n" $(( ir / n )) "$f" | tee -a "$OUT/lines"
}

# run_cachesim SERVER CASE P ARGS...: one JSON line of misses per command.
# Cachegrind (valgrind 3.19) cannot count one window of a run, so this is
# callgrind's simulation of the same caches, switched on like run_callgrind.
run_cachesim() {
  local server=$1 name=$2 p=$3; shift 3
  local n=$(( p == 1 ? N1 : N16 )) f="$OUT/cs.$server.$p.${name//\//-}"
  start "$server" valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --callgrind-out-file="$f"
  rb "$p" "$WARM" "$@"
  callgrind_control -i on "$SERVER_PID" >/dev/null 2>&1
  rb "$p" "$n" "$@"
  callgrind_control -i off "$SERVER_PID" >/dev/null 2>&1
  stop_server
  # "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw" and the totals line
  awk -v n="$n" -v s="$server" -v c="$name" -v p="$p" '
    /^events:/ { for (i = 2; i <= NF; i++) ev[i - 1] = $i }
    /^totals:/ { for (i = 2; i <= NF; i++) t[ev[i - 1]] = $i }
    END { printf "{\"bench\":\"resp_profile\",\"tool\":\"cachesim\",\"server\":\"%s\",\"case\":\"%s\",\"pipeline\":%s,\"commands\":%s", s, c, p, n
          split("Ir D1mr D1mw DLmr DLmw I1mr", want, " ")
          for (i = 1; i <= 6; i++) printf ",\"%s_per_command\":%.2f", want[i], t[want[i]] / n
          printf "}\n" }' "$f" | tee -a "$OUT/lines"
}

# run_strace SERVER CASE P ARGS...: one JSON line
run_strace() {
  local server=$1 name=$2 p=$3; shift 3
  local n=$(( p == 1 ? 2 * N1 : 2 * N16 )) f="$OUT/strace.$server.$p.${name//\//-}"
  start "$server"
  rb "$p" "$WARM" "$@"
  strace -c -f -o "$f" -p "$SERVER_PID" 2>"$f.err" &
  local spid=$!
  local i
  for i in $(seq 50); do grep -q attached "$f.err" 2>/dev/null && break; sleep 0.1; done
  sleep 0.3
  rb "$p" "$n" "$@"
  kill -INT "$spid"; wait "$spid" 2>/dev/null
  stop_server
  awk -v n="$n" -v s="$server" -v c="$name" -v p="$p" '
    # "% time, seconds, usecs/call, calls, [errors,] syscall"
    $1 ~ /^[0-9.]+$/ && NF == 5 { k[$5] = $4 }
    $1 ~ /^[0-9.]+$/ && NF == 6 { k[$6] = $4 }
    END { printf "{\"bench\":\"resp_profile\",\"tool\":\"strace\",\"server\":\"%s\",\"case\":\"%s\",\"pipeline\":%s,\"commands\":%s", s, c, p, n
          split("read write epoll_wait epoll_ctl", want, " ")
          for (i = 1; i <= 4; i++) printf ",\"%s_per_command\":%.3f", want[i], k[want[i]] / n
          printf "}\n" }' "$f" | tee -a "$OUT/lines"
}

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; clients=$CLIENTS keyspace=$KEYSPACE load: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in $MODES; do
  for p in $PIPELINES; do
    run_$mode redis PING "$p" PING
    run_$mode sluiced PING "$p" PING
    run_$mode sluiced cl.throttle/spread "$p" CL.THROTTLE "rl:__rand_int__" 99 100 1
    run_$mode sluiced cl.throttle/hot "$p" CL.THROTTLE "rl:hot" 99 100 1
  done
done
echo "# raw: $OUT"
