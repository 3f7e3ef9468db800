#!/usr/bin/env bash
# gateway_vs_nginx.sh -- sluiced's gateway against nginx limit_req +
# proxy_pass, in front of the same upstream, in one run.
#
#   client ──> front (sluiced gateway | nginx limit_req + proxy_pass) ──> upstream
#
# The upstream is an nginx answering `return 200` (UPSTREAM_WORKERS worker
# processes). Both fronts run at the same time, each with THREADS worker
# threads / processes and keep-alive connections to the upstream; the
# rounds alternate between them (nginx, sluiced, nginx, sluiced, ...), so a
# change in the machine's load falls on both. Cases:
#
#   pass      wrk -t2 -cCONNS, keep-alive, a random key of KEYSPACE per
#             request in X-Key (bench/keyheader.lua; KEYBY=xff puts it in
#             X-Forwarded-For instead, keyed by the client address behind a
#             trusted proxy): a per-key limit no request reaches (gcra
#             1000000/s burst 1000; nginx rate=1000000r/s burst=1000 nodelay).
#   reject    the same client, but half the requests on 100 hot keys (the
#             other half on the KEYSPACE keys), on a limit of gcra 1/s burst 5
#             (nginx rate=1r/s burst=5 nodelay): the hot keys' excess is
#             refused with 429, a steady share (about 45 %) whatever the
#             throughput, while the spread keys pass.
#   h2-mM     h2load (HTTP/2 cleartext, prior knowledge) -mM on CONNS/M
#             connections (so CONNS streams in flight in every h2 case), over
#             KEYSPACE paths /h2/<k> (keyed by the path: sluiced [endpoint],
#             nginx $uri), the pass limit; nginx serves HTTP/2 on its own port.
#   delay     shaping precision: one key, an open-loop load of OFFERED
#             requests/s (2x the rate) for DELAY_SECS s, each on a new
#             connection (bench/offered_load.py), on a limit of DELAY_RATE/s
#             whose excess waits: sluiced gcra DELAY_RATE/1s burst 0,
#             `excess: delay`, max_delay 10s; nginx rate=DELAY_RATEr/s
#             burst=1000 without nodelay (its queue holds 10 s too). The
#             upstream is bench/arrivals_upstream.py, which logs each
#             request's monotonic arrival time; bench/arrivals_stats.py gives
#             the spacing's mean and stdev against the period 1/DELAY_RATE
#             and how many arrived early against t0 + i * period.
#
# Output: one JSON line per case and front (median of RUNS runs of DUR s,
# with min and max), then a table with the ratio sluiced/nginx.
#
#   bench/gateway_vs_nginx.sh                  # ~6 min: RUNS=3, DUR=10
#   PIN=0 THREADS=2 bench/gateway_vs_nginx.sh  # nothing pinned, 2 workers each
#   RUNS=1 DUR=2 bench/gateway_vs_nginx.sh     # smoke
#   SLUICED_B=../before/build/sluiced PIN=0 THREADS=2 CASES="pass reject" bench/gateway_vs_nginx.sh
#                                              # a second build alternating too
#
# Each wrk run also samples, half way through, how the client connections
# are spread over the workers ("spread", a/b: nginx's by worker process
# through ss, sluiced's from /metrics on its HTTP front, METRICS_PORT,
# sluice_worker_connections; NA for a build without that series).
#
# PIN=1 (default): both fronts on CPU 0, the upstream and the client on
# CPU 1 (taskset). Knobs: RUNS (3), DUR (10), CONNS (64), KEYSPACE (100000),
# KEYBY (header|xff), THREADS (1), UPSTREAM_WORKERS (1), H2_STREAMS ("1 16"),
# CASES ("pass reject h2 delay"), DELAY_RATE (100), OFFERED (200),
# DELAY_SECS (5), ARR_PORT (18286), SLUICED (build/sluiced), SLUICED_B (none:
# a second sluiced, e.g. a build before a change, run as "sluiced_b" in the
# same alternation), NGINX, ports UP_PORT (18282), NGX_PORT (18281),
# NGX_H2_PORT (18285), GW_PORT (18283), METRICS_PORT (18284), and for
# SLUICED_B GW_B_PORT (18287), METRICS_B_PORT (18288).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
OUT=$(mktemp -d /tmp/gateway-vs-nginx.XXXXXX)
export PEERBENCH_TMP="$OUT"   # the peer kit's pid files go here, not beside other runs'
# shellcheck source=/dev/null
source "$PEERS/common.sh"
# shellcheck source=/dev/null
source "$PEERS/wrk_common.sh"
# shellcheck source=bench/bench_lib.sh
source "$ROOT/bench/bench_lib.sh"

DUR=${DUR:-10}
CONNS=${CONNS:-64}
KEYSPACE=${KEYSPACE:-100000}
KEYBY=${KEYBY:-header}
THREADS=${THREADS:-1}
UPSTREAM_WORKERS=${UPSTREAM_WORKERS:-1}
H2_STREAMS=${H2_STREAMS:-"1 16"}
CASES=${CASES:-"pass reject h2 delay"}
DELAY_RATE=${DELAY_RATE:-100}
OFFERED=${OFFERED:-200}
DELAY_SECS=${DELAY_SECS:-5}
ARR_PORT=${ARR_PORT:-18286}
PIN=${PIN:-1}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
UP_PORT=${UP_PORT:-18282}
NGX_PORT=${NGX_PORT:-18281}
NGX_H2_PORT=${NGX_H2_PORT:-18285}
GW_PORT=${GW_PORT:-18283}
METRICS_PORT=${METRICS_PORT:-18284}
SLUICED_B=${SLUICED_B:-}
GW_B_PORT=${GW_B_PORT:-18287}
METRICS_B_PORT=${METRICS_B_PORT:-18288}
FRONTS="nginx sluiced${SLUICED_B:+ sluiced_b}"

SRV_PIN=(); CLI_PIN=()
if [ "$PIN" = 1 ]; then SRV_PIN=(taskset -c 0); CLI_PIN=(taskset -c 1); fi

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }
[ -z "$SLUICED_B" ] || [ -x "$SLUICED_B" ] || { echo "no sluiced at SLUICED_B=$SLUICED_B" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "no nginx at $NGINX" >&2; exit 1; }
command -v wrk >/dev/null || { echo "no wrk" >&2; exit 1; }
command -v h2load >/dev/null || { echo "no h2load (nghttp2-client)" >&2; exit 1; }
B_PORTS=(); [ -n "$SLUICED_B" ] && B_PORTS=("$GW_B_PORT" "$METRICS_B_PORT")
for p in "$UP_PORT" "$NGX_PORT" "$NGX_H2_PORT" "$GW_PORT" "$ARR_PORT" "$METRICS_PORT" "${B_PORTS[@]}"; do
  port_free "$p" || exit 1
done

if [ "$KEYBY" = xff ]; then
  NGX_KEY='$binary_remote_addr'; SL_KEY='[ip]'
  NGX_REALIP='set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;'
  SL_TRUST='trusted_proxies: [127.0.0.1/32]'
else
  NGX_KEY='$http_x_key'; SL_KEY='["header:X-Key"]'; NGX_REALIP=''; SL_TRUST=''
fi

nginx_dirs() { mkdir -p "$1"/{body,proxy,fastcgi,uwsgi,scgi}; }
nginx_common() {  # DIR WORKERS
  cat <<EOF
daemon off;
master_process on;
worker_processes $2;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 8192; }
EOF
}
nginx_http_common() {  # DIR
  cat <<EOF
  access_log off;
  keepalive_requests 100000000;   # the default 1000 would make wrk reconnect
  keepalive_timeout 65s;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
  default_type text/plain;
EOF
}

chmod 755 "$OUT"   # as root, nginx's workers run as nobody
nginx_dirs "$OUT/up"; nginx_dirs "$OUT/ngx"
{ nginx_common "$OUT/up" "$UPSTREAM_WORKERS"; echo "http {"; nginx_http_common "$OUT/up"
  cat <<EOF
  server {
    listen 127.0.0.1:$UP_PORT backlog=4096;
    location / { return 200 "ok\n"; }
  }
}
EOF
} >"$OUT/up/nginx.conf"

# The nginx front: the same limits as sluiced's policies below, the same
# upstream with keep-alive connections, X-Forwarded-For appended as sluiced does.
{ nginx_common "$OUT/ngx" "$THREADS"; echo "http {"; nginx_http_common "$OUT/ngx"
  cat <<EOF
  $NGX_REALIP
  limit_req_zone $NGX_KEY zone=pass:64m rate=1000000r/s;
  limit_req_zone $NGX_KEY zone=rej:64m rate=1r/s;
  limit_req_zone \$uri zone=h2pass:64m rate=1000000r/s;
  limit_req_zone \$http_x_key zone=dly:1m rate=${DELAY_RATE}r/s;
  limit_req_status 429;
  limit_req_log_level info;
  upstream up { server 127.0.0.1:$UP_PORT; keepalive 256; }
  upstream arr { server 127.0.0.1:$ARR_PORT; keepalive 256; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
  server {
    listen 127.0.0.1:$NGX_PORT backlog=4096;
    location /pass { limit_req zone=pass burst=1000 nodelay; proxy_pass http://up; }
    location /rej  { limit_req zone=rej burst=5 nodelay; proxy_pass http://up; }
    location /delay { limit_req zone=dly burst=$((DELAY_RATE * 10)); proxy_pass http://arr; }
  }
  server {
    listen 127.0.0.1:$NGX_H2_PORT http2 backlog=4096;
    location /h2/ { limit_req zone=h2pass burst=1000 nodelay; proxy_pass http://up; }
  }
}
EOF
} >"$OUT/ngx/nginx.conf"

sluice_conf() {  # GATEWAY_PORT METRICS_PORT: the HTTP front only serves /metrics
cat <<EOF
listen: {resp: "", http: 127.0.0.1:$2}
limits: {max_connections: 10000}
$SL_TRUST
gateway:
  listen: 127.0.0.1:$1
  headers: {client: off}          # nginx adds no rate limit fields either
  routes:
    - name: pass
      match: {path_prefix: /pass}
      upstream: http://127.0.0.1:$UP_PORT
      policies: [pass]
    - name: rej
      match: {path_prefix: /rej}
      upstream: http://127.0.0.1:$UP_PORT
      policies: [rej]
    - name: h2
      match: {path_prefix: /h2/}
      upstream: http://127.0.0.1:$UP_PORT
      policies: [h2pass]
    - name: delay
      match: {path_prefix: /delay}
      upstream: http://127.0.0.1:$ARR_PORT
      policies: [dly]
      excess: delay
      max_delay: 10s
      queue: $((DELAY_RATE * 10 + 100))
policies:
  - name: dly
    key: ["header:X-Key"]
    limits: [{algorithm: gcra, limit: $DELAY_RATE, period: 1s, burst: 0}]
  - name: pass
    key: $SL_KEY
    limits: [{algorithm: gcra, limit: 1000000, period: 1s, burst: 1000}]
  - name: rej
    key: $SL_KEY
    limits: [{algorithm: gcra, limit: 1, period: 1s, burst: 5}]
  - name: h2pass
    key: [endpoint]
    limits: [{algorithm: gcra, limit: 1000000, period: 1s, burst: 1000}]
EOF
}
sluice_conf "$GW_PORT" "$METRICS_PORT" >"$OUT/sluice.yaml"
sluice_conf "$GW_B_PORT" "$METRICS_B_PORT" >"$OUT/sluice_b.yaml"

awk -v n="$KEYSPACE" -v p="$NGX_H2_PORT" 'BEGIN{for (i = 1; i <= n; i++) print "http://127.0.0.1:" p "/h2/" i}' >"$OUT/uris-nginx"
awk -v n="$KEYSPACE" -v p="$GW_PORT" 'BEGIN{for (i = 1; i <= n; i++) print "http://127.0.0.1:" p "/h2/" i}' >"$OUT/uris-sluiced"
awk -v n="$KEYSPACE" -v p="$GW_B_PORT" 'BEGIN{for (i = 1; i <= n; i++) print "http://127.0.0.1:" p "/h2/" i}' >"$OUT/uris-sluiced_b"

for d in up ngx; do
  "$NGINX" -t -p "$OUT/$d/" -c "$OUT/$d/nginx.conf" -e "$OUT/$d/error.log" >/dev/null 2>&1 \
    || { "$NGINX" -t -p "$OUT/$d/" -c "$OUT/$d/nginx.conf" -e "$OUT/$d/error.log"; exit 1; }
done
"$SLUICED" --check-config --config "$OUT/sluice.yaml" >/dev/null || exit 1

start_bg upstream "$OUT/upstream.log" "${CLI_PIN[@]}" "$NGINX" -p "$OUT/up/" -c "$OUT/up/nginx.conf" -e "$OUT/up/error.log"
start_bg arrivals "$OUT/arrivals.log" "${CLI_PIN[@]}" python3 "$ROOT/bench/arrivals_upstream.py" "$ARR_PORT" "$OUT/arrivals"
start_bg nginx "$OUT/nginx.log" "${SRV_PIN[@]}" "$NGINX" -p "$OUT/ngx/" -c "$OUT/ngx/nginx.conf" -e "$OUT/ngx/error.log"
start_bg sluiced "$OUT/sluiced.log" "${SRV_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads "$THREADS"
[ -z "$SLUICED_B" ] || start_bg sluiced_b "$OUT/sluiced_b.log" "${SRV_PIN[@]}" "$SLUICED_B" --snapshot off \
  --config "$OUT/sluice_b.yaml" --threads "$THREADS"
for p in "$UP_PORT" "$NGX_PORT" "$NGX_H2_PORT" "$GW_PORT" "$ARR_PORT" "${B_PORTS[@]}"; do
  wait_port 127.0.0.1 "$p" || { cat "$OUT"/sluiced*.log >&2; exit 1; }
done
GW_URLS=("http://127.0.0.1:$GW_PORT"); [ -n "$SLUICED_B" ] && GW_URLS+=("http://127.0.0.1:$GW_B_PORT")
for u in "http://127.0.0.1:$NGX_PORT/pass" "${GW_URLS[@]/%//pass}"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Key: probe' -H 'X-Forwarded-For: 10.9.9.9' "$u")
  [ "$code" = 200 ] || { echo "$u answered $code, not 200" >&2; exit 1; }
done
for u in "http://127.0.0.1:$NGX_H2_PORT/h2/probe" "${GW_URLS[@]/%//h2/probe}"; do
  code=$(curl -s --http2-prior-knowledge -o /dev/null -w '%{http_version} %{http_code}' "$u")
  [ "$code" = "2 200" ] || { echo "$u over HTTP/2 answered '$code', not '2 200'" >&2; exit 1; }
done

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); pin=$PIN (fronts: ${SRV_PIN[*]:-any}; upstream and client: ${CLI_PIN[*]:-any})"
  echo "# $("$NGINX" -v 2>&1); $("$SLUICED" --version)${SLUICED_B:+; sluiced_b: $SLUICED_B}; $(h2load --version | head -1); wrk -t2 -c$CONNS; runs=$RUNS dur=${DUR}s keyspace=$KEYSPACE keyby=$KEYBY threads=$THREADS upstream_workers=$UPSTREAM_WORKERS"
} | tee "$OUT/header"

front_pid() { cat "$OUT/$1.pid"; }

# front_port FRONT -> the port its clients use (HTTP/1.1)
front_port() {
  case $1 in nginx) echo "$NGX_PORT" ;; sluiced) echo "$GW_PORT" ;; sluiced_b) echo "$GW_B_PORT" ;; esac
}

# one_run CASE FRONT I -> "rps p50 p99 total non2xx err" (pass and reject: and the spread)
one_run() {
  local case=$1 front=$2 i=$3 port log="$OUT/$1-$2-$3.log" murl= sampler
  port=$(front_port "$front")
  case $front in
    sluiced) murl=http://127.0.0.1:$METRICS_PORT/metrics ;;
    sluiced_b) murl=http://127.0.0.1:$METRICS_B_PORT/metrics ;;
  esac
  case $case in
    pass|reject)
      local path=/pass hot=0 r; [ "$case" = reject ] && { path=/rej; hot=0.5; }
      rm -f "$OUT/spread"
      ( sleep "$(( (DUR + 1) / 2 ))"; conn_spread "$port" "$murl" >"$OUT/spread" ) &
      sampler=$!
      r=$(wrk_run "$log" -t2 -c"$CONNS" -d"${DUR}s" --latency -s "$ROOT/bench/keyheader.lua" \
        "http://127.0.0.1:$port$path" -- "$KEYSPACE" "$KEYBY" "$hot" 100)
      wait "$sampler"
      echo "$r $(cat "$OUT/spread" 2>/dev/null || echo NA)" ;;
    h2-m*)
      local m=${case#h2-m} uris="$OUT/uris-$front" c
      c=$(( CONNS / m )); [ "$c" -lt 2 ] && c=2
      h2load_run "$log" -t2 -c"$c" -m"$m" -D"$DUR" -i "$uris" ;;
  esac
}

case_list=()
for c in $CASES; do
  if [ "$c" = h2 ]; then for m in $H2_STREAMS; do case_list+=("h2-m$m"); done; else case_list+=("$c"); fi
done

for c in "${case_list[@]}"; do
  [ "$c" = delay ] && continue
  declare -A R=()
  for i in $(seq "$RUNS"); do
    for f in $FRONTS; do
      t0=$(cpu_ticks "$(front_pid "$f")"); u0=$(cpu_ticks "$(front_pid upstream)")
      sp=NA
      read -r r q50 q99 tot n2 er sp <<<"$(one_run "$c" "$f" "$i")"
      t1=$(cpu_ticks "$(front_pid "$f")"); u1=$(cpu_ticks "$(front_pid upstream)")
      ucpu=$(awk -v d=$((u1 - u0)) -v hz="$HZ" -v s="$DUR" 'BEGIN{ printf "%d", 100 * d / hz / s }')
      eff=$(awk -v n="$tot" -v d=$((t1 - t0)) -v hz="$HZ" 'BEGIN{ if (d > 0) printf "%d", n * hz / d; else print "NA" }')
      cpu=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v s="$DUR" 'BEGIN{ printf "%d", 100 * d / hz / s }')
      R[$f.rps]+="$r "; R[$f.p50]+="$q50 "; R[$f.p99]+="$q99 "; R[$f.eff]+="$eff "; R[$f.cpu]+="$cpu "; R[$f.ucpu]+="$ucpu "
      R[$f.sp]+="${R[$f.sp]:+,}\"${sp:-NA}\""
      R[$f.tot]=$(( ${R[$f.tot]:-0} + ${tot:-0} )); R[$f.n2]=$(( ${R[$f.n2]:-0} + ${n2:-0} ))
      [ "$er" != none ] && [ "$er" != 0 ] && echo "warning: $c $f run $i: errors $er" >&2
      echo "  $c $f run $i: $r req/s p50 $q50 ms p99 $q99 ms non-2xx $n2/$tot; front cpu $cpu %, $eff req per cpu-s; upstream cpu $ucpu %; spread ${sp:-NA}" >&2
    done
  done
  for f in $FRONTS; do
    read -r m lo hi <<<"$(printf '%s\n' ${R[$f.rps]} | grep -v NA | stats)"
    m50=$(printf '%s\n' ${R[$f.p50]} | med); m99=$(printf '%s\n' ${R[$f.p99]} | med)
    meff=$(printf '%s\n' ${R[$f.eff]} | med); mcpu=$(printf '%s\n' ${R[$f.cpu]} | med); mucpu=$(printf '%s\n' ${R[$f.ucpu]} | med)
    share=$(awk -v a="${R[$f.n2]}" -v b="${R[$f.tot]}" 'BEGIN{ printf "%.1f", (b > 0) ? 100 * a / b : 0 }')
    printf '{"bench":"gateway","case":"%s","front":"%s","threads":%s,"conns":%s,"rps":%s,"rps_min":%s,"rps_max":%s,"p50_ms":%s,"p99_ms":%s,"non2xx_pct":%s,"front_cpu_pct":%s,"req_per_cpu_s":%s,"upstream_cpu_pct":%s,"runs":%s,"dur_s":%s,"keyspace":%s,"keyby":"%s","pin":%s,"spread":[%s]}\n' \
      "$c" "$f" "$THREADS" "$CONNS" "$m" "$lo" "$hi" "$m50" "$m99" "$share" "$mcpu" "$meff" "$mucpu" "$RUNS" "$DUR" "$KEYSPACE" "$KEYBY" "$PIN" "${R[$f.sp]}" | tee -a "$OUT/lines"
  done
  unset R
done

# The shaping case: a fresh key per run and front, so each starts empty.
shaping_rows=()
if [[ " $CASES " == *" delay "* ]]; then
  for i in $(seq "$RUNS"); do
    for f in $FRONTS; do
      port=$(front_port "$f")
      key="d$i-$f-$$"
      load=$("${CLI_PIN[@]}" python3 "$ROOT/bench/offered_load.py" "http://127.0.0.1:$port/delay" "$OFFERED" "$DELAY_SECS" "$key")
      sleep 0.5   # the last log lines
      st=$(python3 "$ROOT/bench/arrivals_stats.py" "$OUT/arrivals" "$key" "$DELAY_RATE")
      line="{\"bench\":\"gateway_delay\",\"front\":\"$f\",\"run\":$i,\"rate\":$DELAY_RATE,\"offered\":$OFFERED,\"load\":$load,\"arrivals\":$st}"
      echo "$line" | tee -a "$OUT/delay-lines"
      shaping_rows+=("$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); a=o["arrivals"]; l=o["load"]
print("%-8s %3d %6d %8s %9s %9s %9s %9s %6s %6d %9s %6s %8s %s" % (o["front"], o["run"], a["arrived"], a["period_ms"], a.get("gap_mean_ms"), a.get("gap_stdev_ms"), a.get("gap_min_ms"), a.get("gap_max_ms"), a.get("within_5pct"), a.get("early_gt_1ms", 0), a.get("max_lead_ms"), a.get("burst"), a.get("rate_measured"), json.dumps(l["statuses"], separators=(",", ":"))))' "$line")")
    done
  done
fi

echo
if [ ${#shaping_rows[@]} -gt 0 ]; then
  echo "shaping: one key, $OFFERED req/s offered for ${DELAY_SECS}s on a limit of $DELAY_RATE/s whose excess waits (gaps in ms)"
  printf '%-8s %3s %6s %8s %9s %9s %9s %9s %6s %6s %9s %6s %8s %s\n' front run arrive period gap_mean gap_sd gap_min gap_max "±5%" early max_lead burst rate statuses
  printf '%s\n' "${shaping_rows[@]}"
  echo
fi
[ -s "$OUT/lines" ] || exit 0
awk -F'[:,{}"]+' '
  { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
    key = v["case"] "|" v["front"]
    rps[key] = v["rps"]; lo[key] = v["rps_min"]; hi[key] = v["rps_max"]
    p50[key] = v["p50_ms"]; p99[key] = v["p99_ms"]; rej[key] = v["non2xx_pct"]
    cpu[key] = v["front_cpu_pct"]; eff[key] = v["req_per_cpu_s"]; order[++n] = key }
  END {
    printf "%-8s %-8s %10s %22s %8s %8s %7s %5s %9s %14s %8s %9s\n", "case", "front", "req/s", "[min..max]", "p50 ms", "p99 ms", "non2xx%", "cpu%", "req/cpu-s", "sluiced/nginx", "p99 s/n", "cpu-s s/n"
    for (k = 1; k <= n; k++) {
      split(order[k], f, "|"); ng = f[1] "|nginx"; ratio = ""; pr = ""; er = ""
      if (f[2] != "nginx" && rps[ng] > 0) { ratio = sprintf("%.2fx", rps[order[k]] / rps[ng]); if (p99[ng] > 0) pr = sprintf("%.2fx", p99[order[k]] / p99[ng]); if (eff[ng] > 0) er = sprintf("%.2fx", eff[order[k]] / eff[ng]) }
      printf "%-8s %-8s %10d %22s %8s %8s %7s %5s %9s %14s %8s %9s\n", f[1], f[2], rps[order[k]],
        "[" lo[order[k]] ".." hi[order[k]] "]", p50[order[k]], p99[order[k]], rej[order[k]], cpu[order[k]], eff[order[k]], ratio, pr, er }
  }' "$OUT/lines"
echo "# medians of $RUNS alternating runs; non2xx% is the share turned away (429); cpu%: the front's CPU time"
echo "# over the run (100 = one core); req/cpu-s: requests answered per CPU second of the front; raw: $OUT"
