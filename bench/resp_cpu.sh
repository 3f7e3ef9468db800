#!/usr/bin/env bash
# resp_cpu.sh -- who bounds a pinned RESP run: the server or redis-benchmark.
#
# bench/resp_vs_redis.sh pins the server on CPU 0 and redis-benchmark on
# CPU 1 and reports requests per second; at pipeline 16 both processes work
# hard, so a ratio below 1 may be either one's ceiling. This runs the same
# load (CLIENTS clients, pipeline P, KEYSPACE random keys) and reports, per
# case, beside the requests per second:
#   server_ns   CPU time of every thread of the server per command
#               (/proc/PID/task/*/schedstat), kernel included;
#   server_busy that CPU time over the wall time: 1.00 = the server's core
#               never idled, so the server was the bound;
#   client_ns   redis-benchmark's user + system time per request;
#   client_busy the same over the wall time (1.00: the client was the bound).
# Cases alternate round by round (Redis PING, sluiced PING, CL.THROTTLE on
# spread keys and on one hot key), ROUNDS rounds, medians.
#
#   PIN=1 bench/resp_cpu.sh                 # the pinned layout of resp_vs_redis.sh
#
# Knobs: ROUNDS (3), N (2000000 commands per run), CLIENTS (50), P (16),
# KEYSPACE (100000), PIN (1), SLUICED (build/sluiced), REDIS_PORT (16381),
# SLUICED_PORT (16391). Output: JSON lines, then a table.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
# shellcheck source=/dev/null
source "$PEERS/common.sh"
# shellcheck source=bench/resp_lib.sh
source "$ROOT/bench/resp_lib.sh"

ROUNDS=${ROUNDS:-3}
N=${N:-2000000}
CLIENTS=${CLIENTS:-50}
P=${P:-16}
KEYSPACE=${KEYSPACE:-100000}
PIN=${PIN:-1}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
REDIS_PORT=${REDIS_PORT:-16381}
SLUICED_PORT=${SLUICED_PORT:-16391}
OUT=$(mktemp -d /tmp/resp-cpu.XXXXXX)

SRV_PIN=(); CLI_PIN=()
if [ "$PIN" = 1 ]; then SRV_PIN=(taskset -c 0); CLI_PIN=(taskset -c 1); fi
[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }

# server_cpu_ns PID: run time of every thread so far
server_cpu_ns() {
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'
}

# one SERVER PID PORT CASE ARGS...: one JSON line
one() {
  local server=$1 pid=$2 port=$3 name=$4; shift 4
  local c0 c1 t0 t1 line
  c0=$(server_cpu_ns "$pid")
  t0=$(date +%s%N)
  line=$( { /usr/bin/time -f "TIME %U %S" "${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" \
            -c "$CLIENTS" -P "$P" -n "$N" -r "$KEYSPACE" --csv "$@" 2>&1; } |
          awk -F, '/^"/ && NR > 1 && $2 ~ /[0-9]/ {gsub(/"/, ""); rps = $2} /^TIME/ {split($0, t, " "); u = t[2]; s = t[3]} END {print rps, u, s}')
  t1=$(date +%s%N)
  c1=$(server_cpu_ns "$pid")
  read -r rps cu cs <<<"$line"
  awk -v s="$server" -v c="$name" -v rps="$rps" -v n="$N" -v sc=$((c1 - c0)) -v w=$((t1 - t0)) \
      -v cu="$cu" -v cs="$cs" -v p="$P" 'BEGIN {
    cl = (cu + cs) * 1e9;
    printf "{\"bench\":\"resp_cpu\",\"server\":\"%s\",\"case\":\"%s\",\"pipeline\":%d,\"ops_per_sec\":%.0f,\"server_ns\":%.0f,\"server_busy\":%.2f,\"client_ns\":%.0f,\"client_busy\":%.2f}\n",
      s, c, p, rps, sc / n, sc / w, cl / n, cl / w }' | tee -a "$OUT/lines"
}

resp_bench_yaml "$OUT/sluice.yaml" "$SLUICED_PORT"

port_free "$REDIS_PORT" || exit 1
port_free "$SLUICED_PORT" || exit 1
start_bench_redis "$OUT" "$REDIS_PORT" || exit 1
RPID=$(cat "$WORK/redis.pid")
start_bg sluiced "$OUT/sluiced.log" "${SRV_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads 1
wait_port 127.0.0.1 "$SLUICED_PORT" || exit 1
SPID=$(cat "$WORK/sluiced.pid")
# taskset execs the server: the PIDs are the servers' own

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; pin=$PIN clients=$CLIENTS P=$P keyspace=$KEYSPACE rounds=$ROUNDS N=$N"
  echo "# where: $([ "$PIN" = 1 ] && echo "servers on CPU 0, redis-benchmark on CPU 1" || echo "nothing pinned")"
  echo "# load average at the start:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"
  echo "# $("$SLUICED" --version); $(redis-server --version | cut -d' ' -f1-3)"
} | tee "$OUT/header"

for r in $(seq "$ROUNDS"); do
  one redis "$RPID" "$REDIS_PORT" PING PING
  one sluiced "$SPID" "$SLUICED_PORT" PING PING
  one sluiced "$SPID" "$SLUICED_PORT" cl.throttle/spread CL.THROTTLE "rl:__rand_int__" 99 100 1
  one sluiced "$SPID" "$SLUICED_PORT" cl.throttle/hot CL.THROTTLE "rl:hot" 99 100 1
done
echo "# load average at the end:$(cut -d' ' -f1-3 /proc/loadavg | sed 's/^/ /')"

echo
python3 - "$OUT/lines" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cases = []
for r in rows:
    k = (r["server"], r["case"])
    if k not in cases:
        cases.append(k)
med = lambda k, f: statistics.median(r[f] for r in rows if (r["server"], r["case"]) == k)
base = med(("redis", "PING"), "ops_per_sec")
print(f"{'server':8} {'case':20} {'ops/s':>10} {'/redis PING':>11} {'server ns':>10} {'busy':>5} {'client ns':>10} {'busy':>5}")
for k in cases:
    print(f"{k[0]:8} {k[1]:20} {med(k, 'ops_per_sec'):10.0f} {med(k, 'ops_per_sec') / base:10.2f}x "
          f"{med(k, 'server_ns'):10.0f} {med(k, 'server_busy'):5.2f} {med(k, 'client_ns'):10.0f} {med(k, 'client_busy'):5.2f}")
EOF
