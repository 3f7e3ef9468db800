#!/usr/bin/env bash
# redis_callgrind.sh -- the instructions Redis runs per rate-limit decision,
# counted by callgrind (machine load does not change them), in one run:
#   direct    N EVALSHA of the peer kit's gcra.lua sent by CLIENTS clients
#             (what Redis + Lua users run today: one script call per decision);
#   strict    N CL.THROTTLE of the same limit sent by the same clients to
#             sluiced (one worker, store.sync strict), whose store is the
#             redis-server under callgrind: sluiced batches them into
#             EVALSHAs of its own evaluate.lua.
# Each case gets a fresh redis-server under `valgrind --tool=callgrind`;
# after a warm-up (the scripts loaded, sluiced connected) the counters are
# zeroed, the N requests sent, and the counters dumped: Ir per decision is
# the whole server's count over N (networking, the command table, the
# script) less serverCron's (inclusive: a timer's work, 10 times a second
# whatever happens, so it grows with the wall time the run took under
# valgrind, i.e. with the machine's load: 2-4k per decision here, reported
# apart), and "in EVALSHA" the part under evalShaCommand (inclusive).
# EVALSHA calls per decision come from INFO commandstats (reset at zero).
# Output: one JSON line per case, then a table.
#
#   bench/redis_callgrind.sh                        # build/sluiced, N=20000
#   SLUICED=/tmp/old/sluiced bench/redis_callgrind.sh   # another build
#   CASES="direct-hot strict-hot" bench/redis_callgrind.sh  # one key for all
#
# Cases: direct, strict (keys rl:<random of KEYSPACE>), direct-hot,
# strict-hot (the key rl:hot), direct-repeat and strict-repeat
# (KEYSPACE_REPEAT keys under a limit of 1000 per hour: keys charged again
# while their state lives), strict-fixed (SL.CHECK of a fixed_window of
# 1000 per hour on KEYSPACE_REPEAT keys: a charge within the window keeps
# the key's expiry).
# Knobs: SLUICED (build/sluiced), N (20000), CLIENTS (64), KEYSPACE
# (100000), KEYSPACE_REPEAT (1000), CASES ("direct strict"), KEEP (0: 1
# keeps the callgrind files), REDIS_PORT (19400), SLUICED_PORT (19401).
set -eu
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
SLUICED=${SLUICED:-$ROOT/build/sluiced}
N=${N:-20000}
CLIENTS=${CLIENTS:-64}
KEYSPACE=${KEYSPACE:-100000}
KEYSPACE_REPEAT=${KEYSPACE_REPEAT:-1000}
CASES=${CASES:-"direct strict"}
KEEP=${KEEP:-0}
REDIS_PORT=${REDIS_PORT:-19400}
SLUICED_PORT=${SLUICED_PORT:-19401}
OUT=$(mktemp -d /tmp/redis-callgrind.XXXXXX)

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }
[ -f "$PEERS/lua/gcra.lua" ] || { echo "no peer kit at $PEERS" >&2; exit 1; }
# wait_port and port_free; its EXIT trap is replaced by cleanup below
# shellcheck source=/dev/null
source "$PEERS/common.sh"

PIDS=()
stop() { # PID: TERM, then wait (only processes this script started)
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() { for p in "${PIDS[@]}"; do stop "$p"; done; [ "$KEEP" = 1 ] || rm -rf "$OUT"; }
trap cleanup EXIT

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

# bench PORT N KEYSPACE ARGS...: N requests, CLIENTS clients, pipeline 1
bench() {
  local port=$1 n=$2 space=$3; shift 3
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P 1 -n "$n" -r "$space" -q "$@" >/dev/null
}

# callgrind's total of a dump file, and the inclusive count of one function
total_of() { awk '/^(summary|totals):/{print $2; exit}' "$1"; }
inclusive_of() {
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk -v f="$2" '$0 ~ (":" f " ") || $0 ~ (":" f "$") {gsub(/,/, "", $1); print $1; exit}'
}

# run CASE: one JSON line
run() {
  local name=$1 space=$KEYSPACE key="rl:__rand_int__" cell="99 100 1" lua="100 100 1 1"
  case $name in
    *-hot) key="rl:hot" ;;
    *-repeat|*-fixed) space=$KEYSPACE_REPEAT; cell="999 1000 3600"; lua="1000 1000 3600 1" ;;
  esac
  port_free "$REDIS_PORT" || exit 1
  valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$name.%p" redis-server --port "$REDIS_PORT" \
    --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT" >"$OUT/redis-$name.log" 2>&1 &
  local vpid=$! spid=""
  PIDS+=("$vpid")
  wait_port 127.0.0.1 "$REDIS_PORT" 60 || exit 1
  local target=$REDIS_PORT
  local -a cmd
  if [[ $name == direct* ]]; then
    local sha; sha=$(rcli SCRIPT LOAD "$(cat "$PEERS/lua/gcra.lua")")
    cmd=(EVALSHA "$sha" 1 "$key" $lua)
  else
    port_free "$SLUICED_PORT" || exit 1
    cat >"$OUT/sluice.yaml" <<EOF
listen: {resp: 127.0.0.1:$SLUICED_PORT, http: off}
limits: {max_connections: 1000}
store: {type: redis, url: "redis://127.0.0.1:$REDIS_PORT", timeout: 10s}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 100, period: 1s, burst: 99}]
  - name: fixed
    limits: [{algorithm: fixed_window, limit: 1000, period: 1h}]
EOF
    "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads 1 >"$OUT/sluiced-$name.log" 2>&1 &
    spid=$!
    PIDS+=("$spid")
    wait_port 127.0.0.1 "$SLUICED_PORT" 60 || exit 1
    target=$SLUICED_PORT
    cmd=(CL.THROTTLE "$key" $cell)
    [[ $name == *-fixed ]] && cmd=(SL.CHECK fixed "$key")
  fi
  # warm-up on other keys: the script loaded, connections made, Lua's
  # allocator grown; then only the measured requests are counted
  bench "$target" 2000 "$space" "${cmd[@]/rl:/warm:}"
  rcli FLUSHALL >/dev/null
  rcli CONFIG RESETSTAT >/dev/null
  callgrind_control -z "$vpid" >/dev/null 2>&1
  bench "$target" "$N" "$space" "${cmd[@]}"
  callgrind_control -d "$vpid" >/dev/null 2>&1
  local calls
  calls=$(rcli INFO commandstats | awk -F'[:=,]' '/^cmdstat_evalsha:/{print $3; f=1} END{if(!f) print 0}')
  local dump; dump=$(ls -t "$OUT"/cg."$name".*.1 2>/dev/null | head -1)
  [ -n "$dump" ] || { echo "$name: no callgrind dump" >&2; exit 1; }
  local ir inside cron
  ir=$(total_of "$dump")
  inside=$(inclusive_of "$dump" evalShaCommand)
  cron=$(inclusive_of "$dump" serverCron)
  [ -n "$spid" ] && stop "$spid"
  rcli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "$vpid" 2>/dev/null || true
  awk -v c="$name" -v n="$N" -v ir="$ir" -v in_="${inside:-0}" -v cron="${cron:-0}" -v calls="$calls" -v cl="$CLIENTS" -v ks="$space" \
    'BEGIN{printf "{\"bench\":\"redis_callgrind\",\"case\":\"%s\",\"decisions\":%d,\"clients\":%d,\"keyspace\":%d,\"ir_per_decision\":%.0f,\"ir_in_evalsha_per_decision\":%.0f,\"ir_cron_per_decision\":%.0f,\"evalsha_calls\":%d,\"evalsha_per_decision\":%.4f,\"ir_per_evalsha\":%.0f}\n",
      c, n, cl, ks, (ir - cron) / n, in_ / n, cron / n, calls, calls / n, calls ? in_ / calls : 0}' | tee -a "$OUT/lines"
}

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); N=$N clients=$CLIENTS keyspace=$KEYSPACE"
  echo "# $(redis-server --version | cut -d' ' -f1-3); $("$SLUICED" --version)"
} | tee "$OUT/header"
for c in $CASES; do run "$c"; done

echo
awk -F'[:,{}"]+' '
  { delete v; for (i = 2; i < NF; i += 2) v[$i] = $(i + 1) }
  v["bench"] == "redis_callgrind" { order[++n] = v["case"]; ir[v["case"]] = v["ir_per_decision"]
    in_[v["case"]] = v["ir_in_evalsha_per_decision"]; cpd[v["case"]] = v["evalsha_per_decision"]
    ipc[v["case"]] = v["ir_per_evalsha"]; cr[v["case"]] = v["ir_cron_per_decision"] }
  END {
    printf "%-16s %16s %18s %14s %14s %12s %12s\n", "case", "Ir/decision", "in EVALSHA/dec.", "EVALSHA/dec.", "Ir/EVALSHA", "direct/this", "(cron/dec.)"
    for (k = 1; k <= n; k++) {
      c = order[k]; d = c; sub(/^strict/, "direct", d)
      printf "%-16s %16d %18d %14s %14d %12s %12d\n", c, ir[c], in_[c], cpd[c], ipc[c],
        (c != d && ir[d] > 0) ? sprintf("%.2fx", ir[d] / ir[c]) : "", cr[c] }
  }' "$OUT/lines"
[ "$KEEP" = 1 ] && echo "# raw: $OUT"
exit 0
