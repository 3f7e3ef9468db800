# shellcheck shell=bash
# bench_lib.sh -- helpers shared by bench/gateway_vs_nginx.sh and
# bench/grpc_vs_http.sh: run wrk / h2load once and print one line of figures.
# Source it after the peer kit's common.sh and wrk_common.sh (stats, to_ms).
# Not a benchmark itself.

# pct FILE COLUMN P -> the P-th percentile (nearest rank) of a column of numbers
pct() {
  sort -g -k"$2,$2" "$1" | awk -v c="$2" -v p="$3" '{a[NR]=$c} END{
    if (NR == 0) { print "NA"; exit }
    i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print a[i] }'
}

# wrk_run LOG ARGS... -> "rps p50_ms p99_ms total non2xx sockerr"
wrk_run() {
  local log=$1; shift
  "${CLI_PIN[@]}" wrk "$@" >"$log" 2>&1
  local rps p50 p99 total non2xx errs
  rps=$(awk '/^Requests\/sec:/{print $2}' "$log")
  p50=$(to_ms "$(awk '$1=="50%"{print $2}' "$log")")
  p99=$(to_ms "$(awk '$1=="99%"{print $2}' "$log")")
  total=$(awk '/requests in/{print $1}' "$log")
  non2xx=$(awk '/Non-2xx or 3xx responses:/{print $NF}' "$log")
  errs=$(awk '/Socket errors:/{sub(/.*Socket errors: /,""); gsub(/ /,""); print}' "$log")
  echo "${rps:-NA} ${p50:-NA} ${p99:-NA} ${total:-0} ${non2xx:-0} ${errs:-none}"
}

# reaped_ticks PID: CPU time (clock ticks) of the children shell PID has
# waited for; taken around one client command (in that shell, which is
# $BASHPID in a subshell, not $$), it is that client's CPU time alone.
reaped_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $14 + $15 }'; }

# h2load_run LOG ARGS... -> "rps p50_ms p99_ms total 4xx+5xx failed"
# Latencies come from h2load's --log-file (one line per request: start µs,
# status, µs to the end of the response), since h2load prints no percentiles.
# h2load's own CPU time (clock ticks) goes to LOG.cpu.
h2load_run() {
  local log=$1 me=$BASHPID c0; shift
  rm -f "$log.req"
  c0=$(reaped_ticks "$me")
  "${CLI_PIN[@]}" h2load --log-file="$log.req" "$@" >"$log" 2>&1
  echo $(( $(reaped_ticks "$me") - c0 )) >"$log.cpu"
  local rps total bad failed p50 p99
  rps=$(awk '/^finished in/{print $4}' "$log")
  total=$(awk '/^requests:/{print $2}' "$log")
  failed=$(awk '/^requests:/{for (i=1;i<NF;i++) if ($(i+1) ~ /^(failed|errored|timeout),?$/) s += $i; print s+0}' "$log")
  bad=$(awk '/^status codes:/{print $7 + $9}' "$log")
  if [ -s "$log.req" ]; then
    p50=$(pct "$log.req" 3 50 | awk '{printf "%.4g", $1 / 1000}')
    p99=$(pct "$log.req" 3 99 | awk '{printf "%.4g", $1 / 1000}')
  fi
  rm -f "$log.req"
  echo "${rps:-NA} ${p50:-NA} ${p99:-NA} ${total:-0} ${bad:-0} ${failed:-0}"
}

# med: numbers on stdin -> median (NA if none)
med() { grep -v NA | stats | awk '{print $1}'; }

# cpu_ticks PID: CPU time (clock ticks, HZ a second) of a process, its
# threads and its children (nginx's workers), so that a run can give a
# server's requests per CPU second: on a shared machine a figure that moves
# far less than requests per second.
cpu_ticks() {
  local p=$1 c
  { cat "/proc/$p/stat"; for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do cat "/proc/$c/stat"; done; } 2>/dev/null \
    | sed 's/^.*) //' | awk '{ s += $12 + $13 } END { print s + 0 }'
}
# shellcheck disable=SC2034  # HZ is for the scripts that source this
HZ=$(getconf CLK_TCK)

# rq_wait_ns PID: time the threads of a process and of its children
# (nginx's workers) have spent ready to run but waiting for a CPU
# (/proc/PID/task/*/schedstat, second field): on a machine shared by the
# client and the server, what the scheduler adds to their latency.
rq_wait_ns() {
  local p=$1 c
  { cat /proc/"$p"/task/*/schedstat
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do cat /proc/"$c"/task/*/schedstat; done
  } 2>/dev/null | awk '{ s += $2 } END { printf "%.0f", s }'
}

# conn_spread PORT [METRICS_URL] -> the established client connections on
# PORT per worker, "a/b": nginx's by worker process (ss -p), sluiced's by
# worker thread from its /metrics (sluice_worker_connections of the front
# on PORT; the scrape's own connection counts when PORT is the HTTP front's)
# when METRICS_URL is given; NA when it cannot be told (a sluiced without
# that series).
conn_spread() {
  local port=$1 url=${2:-} s
  if [ -n "$url" ]; then
    s=$(curl -s --max-time 2 "$url" | awk -v p="port=\"$port\"" \
      'index($0, "sluice_worker_connections{") == 1 && index($0, p) { printf "%s%s", sep, $NF; sep = "/" }')
  else
    s=$(ss -tnpH state established "( sport = :$port )" 2>/dev/null | grep -o 'pid=[0-9]*' | sort | uniq -c \
      | awk '{ printf "%s%s", sep, $1; sep = "/" }')
  fi
  echo "${s:-NA}"
}
