#!/usr/bin/env bash
# h1_profile.sh -- where an HTTP/1.1 request's cost goes, sluiced against
# nginx, on the same load: system calls per request (strace -c) and user
# space instructions per request (callgrind), for four fronts:
#
#   ngx-gw     nginx limit_req + proxy_pass (upstream keepalive)  ──> upstream nginx
#   sl-gw      sluiced's gateway (the same limit)                 ──> the same upstream
#   ngx-check  nginx limit_req answering empty_gif (bench/http_vs_nginx.sh's case)
#   sl-check   sluiced GET /v1/check (the same case)
#
# Each front runs alone, as one process (nginx: master_process off, one
# worker; sluiced: --threads 1), on CPU 0; wrk (-t1 -cCONNS, keep-alive,
# a random key of 100,000 per request) and the upstream on CPU 1. The
# upstream nginx's stub_status gives the connections it accepted during
# the run, so that keep-alive reuse towards the upstream is seen
# (upstream_conns per 10k requests).
#
#   MODE=strace bench/h1_profile.sh        # syscalls per request (default)
#   MODE=callgrind bench/h1_profile.sh     # instructions per request (slow: DUR 5)
#   FRONTS="sl-gw ngx-gw" MODE=strace bench/h1_profile.sh
#
# Output: one line per front: requests, syscalls per request (each kind),
# or instructions per request; the raw strace / callgrind files stay in the
# output directory. Not a throughput benchmark: tracing slows both fronts.
# Knobs: MODE, FRONTS, DUR (5), CONNS (16), SLUICED (build/sluiced), NGINX,
# ports BASE (19040: BASE..BASE+3).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
OUT=$(mktemp -d /tmp/h1-profile.XXXXXX)
export PEERBENCH_TMP="$OUT"
# shellcheck source=/dev/null
source "$PEERS/common.sh"

MODE=${MODE:-strace}
FRONTS=${FRONTS:-"ngx-gw sl-gw ngx-check sl-check"}
DUR=${DUR:-5}
CONNS=${CONNS:-16}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
BASE=${BASE:-19040}
UP_PORT=$BASE FRONT_PORT=$((BASE + 1)) STATUS_PORT=$((BASE + 2)) RESP_PORT=$((BASE + 3))
for p in "$UP_PORT" "$FRONT_PORT" "$STATUS_PORT" "$RESP_PORT"; do port_free "$p" || exit 1; done
command -v wrk >/dev/null || { echo "no wrk" >&2; exit 1; }
[ "$MODE" = strace ] && ! command -v strace >/dev/null && { echo "no strace" >&2; exit 1; }
[ "$MODE" = callgrind ] && ! command -v valgrind >/dev/null && { echo "no valgrind" >&2; exit 1; }

chmod 755 "$OUT"
mkdir -p "$OUT"/{up,ngx}/{body,proxy,fastcgi,uwsgi,scgi}
nginx_head() {  # DIR MASTER
  cat <<EOF
daemon off;
master_process $2;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 65s;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
  default_type text/plain;
EOF
}
{ nginx_head "$OUT/up" on
  cat <<EOF
  server { listen 127.0.0.1:$UP_PORT backlog=4096; location / { return 200 "ok\n"; } }
  server { listen 127.0.0.1:$STATUS_PORT; location / { stub_status; } }
}
EOF
} >"$OUT/up/nginx.conf"
{ nginx_head "$OUT/ngx" off
  cat <<EOF
  limit_req_zone \$http_x_key zone=pass:64m rate=1000000r/s;
  limit_req_zone \$arg_key zone=z:64m rate=1000000r/s;
  limit_req_status 429;
  upstream up { server 127.0.0.1:$UP_PORT; keepalive 256; }
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
  server {
    listen 127.0.0.1:$FRONT_PORT backlog=4096;
    location /pass { limit_req zone=pass burst=1000 nodelay; proxy_pass http://up; }
    location = /check { limit_req zone=z burst=1000 nodelay; empty_gif; }
  }
}
EOF
} >"$OUT/ngx/nginx.conf"
cat >"$OUT/sl-gw.yaml" <<EOF
limits: {max_connections: 10000}
gateway:
  listen: 127.0.0.1:$FRONT_PORT
  headers: {client: off}
  routes:
    - name: pass
      match: {path_prefix: /pass}
      upstream: http://127.0.0.1:$UP_PORT
      policies: [pass]
policies:
  - name: pass
    key: ["header:X-Key"]
    limits: [{algorithm: gcra, limit: 1000000, period: 1s, burst: 1000}]
EOF
cat >"$OUT/sl-check.yaml" <<EOF
listen: {resp: 127.0.0.1:$RESP_PORT, http: 127.0.0.1:$FRONT_PORT}
limits: {max_connections: 10000}
policies:
  - name: bench
    limits: [{algorithm: token_bucket, limit: 1000000, period: 1s}]
EOF
sed -e 's/wrk\.path \.\. "?key=" \.\. k/wrk.path .. sep .. "key=" .. k/' \
    -e 's/^function init(args)$/function init(args)\n  sep = wrk.path:find("?", 1, true) and "\&" or "?"/' \
    "$PEERS/wrk/randkey.lua" >"$OUT/randkey_query.lua"

"$NGINX" -t -p "$OUT/up/" -c "$OUT/up/nginx.conf" -e "$OUT/up/error.log" >/dev/null 2>&1 || exit 1
"$NGINX" -t -p "$OUT/ngx/" -c "$OUT/ngx/nginx.conf" -e "$OUT/ngx/error.log" >/dev/null 2>&1 || exit 1
start_bg upstream "$OUT/upstream.log" taskset -c 1 "$NGINX" -p "$OUT/up/" -c "$OUT/up/nginx.conf" -e "$OUT/up/error.log"
wait_port 127.0.0.1 "$UP_PORT" || exit 1
wait_port 127.0.0.1 "$STATUS_PORT" || exit 1

accepts() { curl -s "http://127.0.0.1:$STATUS_PORT/" | awk 'NR == 3 { print $1 }'; }

echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg); mode=$MODE wrk -t1 -c$CONNS -d${DUR}s; front on CPU 0, wrk and upstream on CPU 1"
for f in $FRONTS; do
  pre=()
  [ "$MODE" = callgrind ] && pre=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$OUT/callgrind.$f")
  case $f in
    ngx-*) cmd=("$NGINX" -p "$OUT/ngx/" -c "$OUT/ngx/nginx.conf" -e "$OUT/ngx/error.log") ;;
    sl-*) cmd=("$SLUICED" --snapshot off --config "$OUT/$f.yaml" --threads 1) ;;
  esac
  case $f in
    ngx-gw) url="http://127.0.0.1:$FRONT_PORT/pass"; script=$ROOT/bench/keyheader.lua ;;
    sl-gw) url="http://127.0.0.1:$FRONT_PORT/pass"; script=$ROOT/bench/keyheader.lua ;;
    ngx-check) url="http://127.0.0.1:$FRONT_PORT/check"; script=$OUT/randkey_query.lua ;;
    sl-check) url="http://127.0.0.1:$FRONT_PORT/v1/check?policy=bench"; script=$OUT/randkey_query.lua ;;
  esac
  start_bg "$f" "$OUT/$f.log" taskset -c 0 "${pre[@]}" "${cmd[@]}"
  wait_port 127.0.0.1 "$FRONT_PORT" 60 || { cat "$OUT/$f.log" >&2; exit 1; }
  pid=$(cat "$OUT/$f.pid")
  # warm: the keys' states, the upstream pool
  taskset -c 1 wrk -t1 -c"$CONNS" -d1s -s "$script" "$url" -- 100000 >/dev/null 2>&1
  a0=$(accepts)
  tracer=""
  if [ "$MODE" = strace ]; then
    pids=(); for t in /proc/"$pid"/task/*; do pids+=(-p "${t##*/}"); done
    strace -c -f -o "$OUT/strace.$f" "${pids[@]}" 2>/dev/null &
    tracer=$!
    sleep 1
  else
    callgrind_control -i on "$pid" >/dev/null
  fi
  taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$script" "$url" -- 100000 >"$OUT/wrk.$f" 2>&1
  a1=$(accepts)
  if [ -n "$tracer" ]; then kill -INT "$tracer"; wait "$tracer" 2>/dev/null; else callgrind_control -i off "$pid" >/dev/null; callgrind_control -d "$pid" >/dev/null; fi
  stop_named "$f"
  sleep 1
  n=$(awk '/requests in/{print $1}' "$OUT/wrk.$f")
  bad=$(awk '/Non-2xx/{print $NF}' "$OUT/wrk.$f")
  printf '%-10s requests %-8s non2xx %-6s upstream_conns_per_10k %s' "$f" "$n" "${bad:-0}" \
    "$(awk -v a=$((a1 - a0)) -v n="$n" 'BEGIN{ printf "%.2f", (n > 0) ? 1e4 * (a - 1) / n : 0 }')"
  if [ "$MODE" = strace ]; then
    awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 { c = $4; name = $NF; if (name == "total") { tot = c; next } s = s sprintf(" %s=%.2f", name, c / n) }
                   END { printf "  syscalls/req %.2f:%s\n", tot / n, s }' "$OUT/strace.$f"
  else
    # the dump taken before the stop (the one at exit adds nothing: instrumentation is off by then)
    ir=$(cat "$OUT/callgrind.$f"* | awk '/^totals:/{ s += $2 } END { print s + 0 }')
    awk -v ir="$ir" -v n="$n" 'BEGIN{ printf "  instructions/req %d\n", ir / n }'
  fi
done
echo "# raw: $OUT (upstream_conns_per_10k: connections the upstream accepted during the run, less the stub_status query's own)"
