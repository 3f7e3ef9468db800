#!/usr/bin/env bash
# http_vs_nginx.sh -- sluiced's HTTP front against nginx limit_req, in one run.
#
# wrk (-t2 --latency, CONNS connections, a random key out of KEYSPACE per
# request) drives, with the same settings:
#   nginx     the peer kit's pass/spread case: `limit_req zone=z burst=1000
#             nodelay` keyed by $arg_key (rate 1000000r/s), answering
#             empty_gif, with WORKERS worker processes; the peer kit's
#             wrk/randkey.lua appends ?key=<k>;
#   sluiced   GET /v1/check?policy=bench&key=<k> on its HTTP port, a policy
#             that allows everything (token_bucket 1000000 per 1s), with
#             THREADS worker threads; a copy of randkey.lua that appends
#             &key=<k> (written to the output directory).
# Both allow every request, so this compares the cost of a decision over
# HTTP/1.1 keep-alive. Both servers run at the same time, with the same
# count N of workers / threads (each N of THREADS); every case runs RUNS
# times for DUR seconds, alternating nginx, sluiced, nginx, ... so that a
# change in the machine's load falls on both; the median is reported with
# its spread, and the requests answered per CPU second of the server (its
# CPU time over the run, /proc; nginx's workers included), which moves far
# less than requests per second on a shared machine. Output: JSON lines,
# then a table with the ratios sluiced/nginx (same N, same connections).
# Servers are started and stopped here (by PID, loopback only), with the
# peer kit's helpers (../../shared/bench/peers/common.sh).
#
#   bench/http_vs_nginx.sh                       # everything (~5 min)
#   RUNS=5 PIN=1 bench/http_vs_nginx.sh          # PIN=1: servers on CPU 0, wrk on CPU 1
#   RUNS=1 DUR=2 CONNS=64 THREADS=1 bench/http_vs_nginx.sh   # smoke
#   SLUICED_B=../before/build/sluiced bench/http_vs_nginx.sh   # a second build, alternating too
#
# Each run also samples, half way through, how the connections are spread
# over the workers ("spread", a/b: nginx's by worker process through ss,
# sluiced's from its /metrics, sluice_worker_connections; NA for a build
# without that series).
#
# Knobs: RUNS (3), DUR (10, seconds), CONNS ("64 256"), KEYSPACE (100000),
# PIN (0), THREADS ("1 2": sluiced's threads and nginx's workers), WRK_THREADS (2),
# SLUICED (build/sluiced), SLUICED_B (none: a second sluiced, e.g. a build
# before a change, run as "sluiced_b" in the same alternation), NGINX (nginx
# on PATH, else /usr/sbin/nginx), NGINX_PORT (18080), SLUICED_PORT (18091),
# SLUICED_B_PORT (18092).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
OUT=$(mktemp -d /tmp/http-vs-nginx.XXXXXX)
export PEERBENCH_TMP="$OUT"   # the peer kit's pid files go here, not beside other runs'
# shellcheck source=/dev/null
source "$PEERS/common.sh"
# shellcheck source=/dev/null
source "$PEERS/wrk_common.sh"   # to_ms
# shellcheck source=bench/bench_lib.sh
source "$ROOT/bench/bench_lib.sh"   # wrk_run, cpu_ticks

DUR=${DUR:-10}
CONNS=${CONNS:-"64 256"}
KEYSPACE=${KEYSPACE:-100000}
PIN=${PIN:-0}
THREADS=${THREADS:-${WORKERS:-"1 2"}}   # WORKERS: the former name of nginx's count
WRK_THREADS=${WRK_THREADS:-2}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
NGINX_PORT=${NGINX_PORT:-18080}
SLUICED_PORT=${SLUICED_PORT:-18091}
SLUICED_B=${SLUICED_B:-}
SLUICED_B_PORT=${SLUICED_B_PORT:-18092}
SERVERS="nginx sluiced${SLUICED_B:+ sluiced_b}"

SRV_PIN=(); CLI_PIN=()
if [ "$PIN" = 1 ]; then SRV_PIN=(taskset -c 0); CLI_PIN=(taskset -c 1); fi

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }
[ -z "$SLUICED_B" ] || [ -x "$SLUICED_B" ] || { echo "no sluiced at SLUICED_B=$SLUICED_B" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "no nginx at $NGINX (apt-get install nginx)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "no wrk (apt-get install wrk)" >&2; exit 1; }

# The peer kit's randkey.lua with one change: "&key=" when the path already
# has a query (sluiced's /v1/check?policy=bench), "?key=" otherwise.
sed -e '1i -- written by bench/http_vs_nginx.sh: the peer kit randkey.lua, with &key= after a query' \
    -e 's/wrk\.path \.\. "?key=" \.\. k/wrk.path .. sep .. "key=" .. k/' \
    -e 's/^function init(args)$/function init(args)\n  sep = wrk.path:find("?", 1, true) and "\&" or "?"/' \
    "$PEERS/wrk/randkey.lua" >"$OUT/randkey_query.lua"
grep -q 'sep .. "key="' "$OUT/randkey_query.lua" && grep -q '^  sep = ' "$OUT/randkey_query.lua" \
  || { echo "could not adapt $PEERS/wrk/randkey.lua" >&2; exit 1; }

# one_run SERVER N CONNS I -> "rps p50_ms p99_ms total non2xx sockerr req_per_cpu_s spread rq_us"
# (rq_us: the server's threads' run-queue wait per request, microseconds)
one_run() {
  local server=$1 n=$2 conns=$3 i=$4 script url t0 t1 r port murl sampler
  case $server in
    nginx) port=$NGINX_PORT ;;
    sluiced) port=$SLUICED_PORT ;;
    sluiced_b) port=$SLUICED_B_PORT ;;
  esac
  if [ "$server" = nginx ]; then script=$PEERS/wrk/randkey.lua url="http://127.0.0.1:$port/pass" murl=
  else script=$OUT/randkey_query.lua url="http://127.0.0.1:$port/v1/check?policy=bench" murl="http://127.0.0.1:$port/metrics"; fi
  rm -f "$OUT/spread"
  ( sleep "$(( (DUR + 1) / 2 ))"; conn_spread "$port" "$murl" >"$OUT/spread" ) &
  sampler=$!
  t0=$(cpu_ticks "$(cat "$OUT/$server.pid")")
  w0=$(rq_wait_ns "$(cat "$OUT/$server.pid")")
  r=$(wrk_run "$OUT/wrk-$server-$n-$conns-$i.log" -t"$WRK_THREADS" -c"$conns" -d"${DUR}s" --latency -s "$script" "$url" -- "$KEYSPACE")
  w1=$(rq_wait_ns "$(cat "$OUT/$server.pid")")
  t1=$(cpu_ticks "$(cat "$OUT/$server.pid")")
  wait "$sampler"
  read -r _ _ _ tot _ _ <<<"$r"
  echo "$r $(awk -v n="$tot" -v d=$((t1 - t0)) -v hz="$HZ" 'BEGIN{ if (d > 0) printf "%d", n * hz / d; else print "NA" }') $(cat "$OUT/spread" 2>/dev/null || echo NA) $(awk -v n="$tot" -v w=$((w1 - w0)) 'BEGIN{ if (n > 0) printf "%.1f", w / n / 1000; else print "NA" }')"
}

# measure N CONNS: RUNS alternating runs of each server, one JSON line each
measure() {
  local n=$1 conns=$2 i f r q50 q99 tot n2 er eff sp rq
  declare -A R=()
  for i in $(seq "$RUNS"); do
    for f in $SERVERS; do
      read -r r q50 q99 tot n2 er eff sp rq <<<"$(one_run "$f" "$n" "$conns" "$i")"
      R[$f.rps]+="$r "; R[$f.p50]+="$q50 "; R[$f.p99]+="$q99 "; R[$f.eff]+="$eff "; R[$f.sp]+="${R[$f.sp]:+,}\"$sp\""
      R[$f.rq]+="$rq "
      R[$f.bad]=$(( ${R[$f.bad]:-0} + ${n2:-0} )); [ "$er" != none ] && R[$f.err]=$er
      echo "  $f n=$n c=$conns run $i: $r req/s p50 $q50 ms p99 $q99 ms; $eff req per cpu-s; spread $sp; run-queue wait $rq us/req" >&2
    done
  done
  local m lo hi m50 m99 meff mrq
  for f in $SERVERS; do
    read -r m lo hi <<<"$(printf '%s\n' ${R[$f.rps]} | grep -v NA | stats)"
    m50=$(printf '%s\n' ${R[$f.p50]} | med); m99=$(printf '%s\n' ${R[$f.p99]} | med); meff=$(printf '%s\n' ${R[$f.eff]} | med)
    mrq=$(printf '%s\n' ${R[$f.rq]} | med)
    [ "${R[$f.bad]}" -gt 0 ] && echo "warning: $f n=$n c=$conns: ${R[$f.bad]} answers were not 2xx" >&2
    [ -n "${R[$f.err]:-}" ] && echo "warning: $f n=$n c=$conns: socket errors ${R[$f.err]}" >&2
    printf '{"bench":"http","server":"%s","threads":%s,"case":"pass/spread","conns":%s,"rps":%s,"rps_min":%s,"rps_max":%s,"p50_ms":%s,"p99_ms":%s,"req_per_cpu_s":%s,"rq_wait_us_per_req":%s,"non2xx":%s,"runs":%s,"dur_s":%s,"keyspace":%s,"spread":[%s]}\n' \
      "$f" "$n" "$conns" "$m" "$lo" "$hi" "$m50" "$m99" "$meff" "$mrq" "${R[$f.bad]}" "$RUNS" "$DUR" "$KEYSPACE" "${R[$f.sp]}" | tee -a "$OUT/lines"
  done
}

write_nginx_conf() {  # WORKERS
  mkdir -p "$OUT/nginx"/{body,proxy,fastcgi,uwsgi,scgi}
  chmod 755 "$OUT"   # as root, nginx's workers run as nobody
  cat >"$OUT/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes $1;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 100000000;   # default 1000 would make wrk reconnect
  keepalive_timeout 65s;
  client_body_temp_path $OUT/nginx/body;
  proxy_temp_path $OUT/nginx/proxy;
  fastcgi_temp_path $OUT/nginx/fastcgi;
  uwsgi_temp_path $OUT/nginx/uwsgi;
  scgi_temp_path $OUT/nginx/scgi;
  default_type text/plain;
  limit_req_zone \$arg_key zone=z:64m rate=1000000r/s;
  limit_req_status 429;
  limit_req_log_level info;
  server {
    listen 127.0.0.1:$NGINX_PORT backlog=4096;
    location = /pass { limit_req zone=z burst=1000 nodelay; empty_gif; }
  }
}
EOF
}

cat >"$OUT/sluice.yaml" <<EOF
listen: {resp: 127.0.0.1:0, http: 127.0.0.1:$SLUICED_PORT}
limits: {max_connections: 10000}
policies:
  - name: bench
    limits: [{algorithm: token_bucket, limit: 1000000, period: 1s}]
EOF

port_free "$NGINX_PORT" || exit 1
port_free "$SLUICED_PORT" || exit 1
[ -z "$SLUICED_B" ] || port_free "$SLUICED_B_PORT" || exit 1

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; load $(cut -d" " -f1-3 /proc/loadavg); pin=$PIN conns=\"$CONNS\" keyspace=$KEYSPACE runs=$RUNS dur=${DUR}s wrk -t$WRK_THREADS"
  echo "# $("$NGINX" -v 2>&1); $("$SLUICED" --version)${SLUICED_B:+; sluiced_b: $SLUICED_B}; wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}')"
  echo "# nginx: limit_req burst=1000 nodelay on \$arg_key, empty_gif; sluiced: GET /v1/check, token_bucket 1000000/s"
} | tee "$OUT/header"

for n in $THREADS; do
  write_nginx_conf "$n"
  "$NGINX" -t -p "$OUT/nginx/" -c "$OUT/nginx/nginx.conf" -e "$OUT/nginx/error.log" >/dev/null 2>&1 \
    || { "$NGINX" -t -p "$OUT/nginx/" -c "$OUT/nginx/nginx.conf" -e "$OUT/nginx/error.log"; exit 1; }
  start_bg nginx "$OUT/nginx-$n.log" "${SRV_PIN[@]}" "$NGINX" -p "$OUT/nginx/" -c "$OUT/nginx/nginx.conf" -e "$OUT/nginx/error.log"
  start_bg sluiced "$OUT/sluiced-$n.log" "${SRV_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads "$n"
  [ -z "$SLUICED_B" ] || start_bg sluiced_b "$OUT/sluiced_b-$n.log" "${SRV_PIN[@]}" "$SLUICED_B" --snapshot off \
    --config "$OUT/sluice.yaml" --threads "$n" --http "127.0.0.1:$SLUICED_B_PORT"
  wait_port 127.0.0.1 "$NGINX_PORT" || exit 1
  for f in $SERVERS; do
    [ "$f" = nginx ] && continue
    port=$SLUICED_PORT; [ "$f" = sluiced_b ] && port=$SLUICED_B_PORT
    if ! wait_port 127.0.0.1 "$port"; then
      echo "$f did not open its HTTP port $port (no HTTP front in this build?):" >&2
      cat "$OUT/$f-$n.log" >&2
      exit 1
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/check?policy=bench&key=probe")
    [ "$code" = 200 ] || { echo "$f /v1/check answered $code, not 200" >&2; exit 1; }
  done
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/pass?key=probe")
  [ "$code" = 200 ] || { echo "nginx /pass answered $code, not 200" >&2; exit 1; }
  for c in $CONNS; do measure "$n" "$c"; done
  for f in $SERVERS; do stop_named "$f"; done
done

echo
awk -F'[:,{}"]+' '
  { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
    key = v["server"] "|" v["threads"] "|" v["conns"]
    rps[key] = v["rps"]; lo[key] = v["rps_min"]; hi[key] = v["rps_max"]
    p50[key] = v["p50_ms"]; p99[key] = v["p99_ms"]; eff[key] = v["req_per_cpu_s"]; rq[key] = v["rq_wait_us_per_req"]; order[++n] = key }
  END {
    printf "%-8s %3s %5s %10s %22s %8s %8s %9s %9s %14s %8s %9s\n", "server", "thr", "conns", "req/s", "[min..max]", "p50 ms", "p99 ms", "req/cpu-s", "rq us/req", "sluiced/nginx", "p99 s/n", "cpu-s s/n"
    for (k = 1; k <= n; k++) {
      split(order[k], f, "|")
      ng = "nginx|" f[2] "|" f[3]
      ratio = ""; pr = ""; er = ""
      if (f[1] != "nginx" && (ng in rps) && rps[ng] > 0) {
        ratio = sprintf("%.2fx", rps[order[k]] / rps[ng])
        if (p99[ng] > 0) pr = sprintf("%.2fx", p99[order[k]] / p99[ng])
        if (eff[ng] > 0) er = sprintf("%.2fx", eff[order[k]] / eff[ng]) }
      printf "%-8s %3s %5s %10d %22s %8s %8s %9s %9s %14s %8s %9s\n", f[1], f[2], f[3], rps[order[k]],
        "[" lo[order[k]] ".." hi[order[k]] "]", p50[order[k]], p99[order[k]], eff[order[k]], rq[order[k]], ratio, pr, er }
  }' "$OUT/lines"
echo "# thr: nginx worker processes / sluiced threads; medians of $RUNS alternating runs; req/cpu-s: requests"
echo "# answered per CPU second of the server; rq us/req: the server's threads' time ready to run but"
echo "# waiting for a CPU, per request; the ratios compare equal thread counts and connections"
echo "# raw: $OUT"
