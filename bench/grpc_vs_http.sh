#!/usr/bin/env bash
# grpc_vs_http.sh -- sluiced's gRPC front (Envoy's ShouldRateLimit) beside
# the same decisions through the HTTP front (/v1/check) and RESP, in one run.
#
# One sluiced (THREADS worker threads) serves all three fronts; one policy
# `bench` (gcra 1000000/s burst 1000: every request allowed) and one key,
# asked the same way on each front:
#
#   grpc      h2load, gRPC unary frames: a pre-encoded RateLimitRequest
#             {domain "bench", descriptors [[k=1]]} (written here, with its
#             5-byte gRPC prefix), POSTed to
#             /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
#             with content-type application/grpc and te: trailers. Without
#             an rls: section the policy named after the domain decides it,
#             keyed "k=1" (docs/integrations/envoy-rls.md).
#   h2        h2load GET /v1/check?policy=bench&key=k%3D1 over HTTP/2
#             cleartext: the same client, protocol and concurrency as grpc.
#   h1        wrk GET /v1/check (HTTP/1.1 keep-alive), CONNS x STREAMS
#             connections, at most 64 (wrk has one request in flight per
#             connection, and its one thread slows past that).
#   resp      redis-benchmark SL.CHECK bench k=1, CONNS clients, -P STREAMS.
#
# Each case runs at STREAMS = 1 and 64 requests in flight per connection
# (h2load -m, redis-benchmark -P) on CONNS connections. The cases alternate
# round by round (grpc, h2, h1, resp, grpc, ...), RUNS rounds of DUR s; the
# median and its min..max are reported, then a table with gRPC/HTTP-2 (same
# client) and gRPC/HTTP-1.1. Each run also gives how busy sluiced and the
# client were (CPU seconds over DUR; wrk's are not taken) and the client's
# CPU per request: when the client is the busier one, it bounds req/s, and the
# ratio of req/s follows the ratio of the client's costs, not sluiced's. p50/p99 for h2load come from its per-request
# log (h2load prints no percentiles), for redis-benchmark from --csv.
# gRPC answers are checked once with curl (grpc-status: 0, overall_code OK);
# h2load itself only sees HTTP status 200.
#
#   bench/grpc_vs_http.sh                 # ~5 min: RUNS=3 DUR=10
#   RUNS=1 DUR=2 bench/grpc_vs_http.sh    # smoke
#
# PIN=1 (default): sluiced (all its threads) on CPU 0, the client on CPU 1.
# Knobs: RUNS (3), DUR (10), CONNS (8), STREAMS ("1 64"), THREADS (1),
# CASES ("grpc h2 h1 resp"), SLUICED (build/sluiced), ports RESP_PORT
# (18291), HTTP_PORT (18292), GRPC_PORT (18293).
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/peers}"
OUT=$(mktemp -d /tmp/grpc-vs-http.XXXXXX)
export PEERBENCH_TMP="$OUT"
# shellcheck source=/dev/null
source "$PEERS/common.sh"
# shellcheck source=/dev/null
source "$PEERS/wrk_common.sh"
# shellcheck source=bench/bench_lib.sh
source "$ROOT/bench/bench_lib.sh"

DUR=${DUR:-10}
CONNS=${CONNS:-8}
STREAMS=${STREAMS:-"1 64"}
THREADS=${THREADS:-1}
CASES=${CASES:-"grpc h2 h1 resp"}
PIN=${PIN:-1}
SLUICED=${SLUICED:-$ROOT/build/sluiced}
RESP_PORT=${RESP_PORT:-18291}
HTTP_PORT=${HTTP_PORT:-18292}
GRPC_PORT=${GRPC_PORT:-18293}
RLS_PATH=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

SRV_PIN=(); CLI_PIN=()
if [ "$PIN" = 1 ]; then SRV_PIN=(taskset -c 0); CLI_PIN=(taskset -c 1); fi

[ -x "$SLUICED" ] || { echo "no sluiced at $SLUICED (make first)" >&2; exit 1; }
for t in h2load wrk redis-benchmark curl; do command -v $t >/dev/null || { echo "no $t" >&2; exit 1; }; done
for p in "$RESP_PORT" "$HTTP_PORT" "$GRPC_PORT"; do port_free "$p" || exit 1; done

# RateLimitRequest {1: "bench", 2: {1: {1: "k", 2: "1"}}} in protobuf's wire
# format, behind gRPC's prefix (0 = not compressed, 4-byte big-endian length).
python3 - "$OUT/rls.bin" <<'EOF'
import struct, sys
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])
def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload
msg = field(1, b"bench") + field(2, field(1, field(1, b"k") + field(2, b"1")))
open(sys.argv[1], "wb").write(b"\x00" + struct.pack(">I", len(msg)) + msg)
EOF

cat >"$OUT/sluice.yaml" <<EOF
listen: {resp: 127.0.0.1:$RESP_PORT, http: 127.0.0.1:$HTTP_PORT, grpc: 127.0.0.1:$GRPC_PORT}
limits: {max_connections: 10000}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 1000000, period: 1s, burst: 1000}]
EOF
cat >"$OUT/path.lua" <<'EOF'
-- written by bench/grpc_vs_http.sh: every request the same /v1/check
function request() return wrk.format(nil, wrk.path) end
EOF

start_bg sluiced "$OUT/sluiced.log" "${SRV_PIN[@]}" "$SLUICED" --snapshot off --config "$OUT/sluice.yaml" --threads "$THREADS"
for p in "$RESP_PORT" "$HTTP_PORT" "$GRPC_PORT"; do wait_port 127.0.0.1 "$p" || { cat "$OUT/sluiced.log" >&2; exit 1; }; done

# The gRPC answer, once: grpc-status 0 in the trailers, overall_code OK (field 1 = 1).
curl -s --http2-prior-knowledge -D "$OUT/grpc-head" -o "$OUT/grpc-answer" -H 'content-type: application/grpc' \
  -H 'te: trailers' --data-binary @"$OUT/rls.bin" "http://127.0.0.1:$GRPC_PORT$RLS_PATH"
grep -q '^grpc-status: 0' "$OUT/grpc-head" && [ "$(od -An -tx1 -j5 -N2 "$OUT/grpc-answer" | tr -d ' ')" = 0801 ] \
  || { echo "the gRPC front did not answer OK:" >&2; cat "$OUT/grpc-head" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/v1/check?policy=bench&key=k%3D1")" = 200 ] \
  || { echo "/v1/check did not answer 200" >&2; exit 1; }
[ "$(redis-cli -p "$RESP_PORT" SL.CHECK bench k=1 | head -1)" = 1 ] || { echo "SL.CHECK did not allow" >&2; exit 1; }

{
  echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); pin=$PIN (sluiced: ${SRV_PIN[*]:-any}; client: ${CLI_PIN[*]:-any})"
  echo "# $("$SLUICED" --version) threads=$THREADS; $(h2load --version | head -1); $(redis-benchmark --version 2>/dev/null | head -1); runs=$RUNS dur=${DUR}s conns=$CONNS streams=\"$STREAMS\""
} | tee "$OUT/header"

# resp_run LOG CLIENTS PIPELINE -> "rps p50 p99 total 0 0"
resp_run() {
  local log=$1 c=$2 p=$3 n
  n=$(( 40000 * DUR * (p > 1 ? 8 : 1) ))   # about DUR seconds at this machine's rates
  local me=$BASHPID c0
  c0=$(reaped_ticks "$me")
  "${CLI_PIN[@]}" redis-benchmark -p "$RESP_PORT" -c "$c" -P "$p" -n "$n" --csv SL.CHECK bench k=1 >"$log" 2>&1
  echo $(( $(reaped_ticks "$me") - c0 )) >"$log.cpu"
  awk -F, -v n="$n" '/^"SL.CHECK/ { gsub(/"/, ""); print $2, $5, $7, n, 0, 0 }' "$log"
}

# one_run CASE M I -> "rps p50 p99 total bad failed"
one_run() {
  local case=$1 m=$2 i=$3 log="$OUT/$1-m$2-$3.log"
  case $case in
    grpc) h2load_run "$log" -t1 -c"$CONNS" -m"$m" -D"$DUR" -d "$OUT/rls.bin" \
            -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$GRPC_PORT$RLS_PATH" ;;
    h2)   h2load_run "$log" -t1 -c"$CONNS" -m"$m" -D"$DUR" "http://127.0.0.1:$HTTP_PORT/v1/check?policy=bench&key=k%3D1" ;;
    h1)   wrk_run "$log" -t1 -c$(( CONNS * m > 64 ? 64 : CONNS * m )) -d"${DUR}s" --latency -s "$OUT/path.lua" \
            "http://127.0.0.1:$HTTP_PORT/v1/check?policy=bench&key=k%3D1" ;;
    resp) resp_run "$log" "$CONNS" "$m" ;;
  esac
}

for m in $STREAMS; do
  declare -A R=()
  for i in $(seq "$RUNS"); do
    for c in $CASES; do
      t0=$(cpu_ticks "$(cat "$OUT/sluiced.pid")")
      read -r r q50 q99 tot bad er <<<"$(one_run "$c" "$m" "$i")"
      t1=$(cpu_ticks "$(cat "$OUT/sluiced.pid")")
      cli=$(cat "$OUT/$c-m$m-$i.log.cpu" 2>/dev/null || echo NA)   # wrk's (h1) is not taken
      eff=$(awk -v n="$tot" -v d=$((t1 - t0)) -v hz="$HZ" 'BEGIN{ if (d > 0) printf "%d", n * hz / d; else print "NA" }')
      read -r sbusy cbusy cus <<<"$(awk -v s=$((t1 - t0)) -v c="$cli" -v sec="$DUR" -v n="$tot" -v hz="$HZ" \
        'BEGIN{ printf "%.2f %s %s\n", s / hz / sec, (c == "NA" ? "NA" : sprintf("%.2f", c / hz / sec)),
                (c == "NA" || n == 0 ? "NA" : sprintf("%.2f", c / hz / n * 1e6)) }')"
      R[$c.rps]+="$r "; R[$c.p50]+="$q50 "; R[$c.p99]+="$q99 "; R[$c.eff]+="$eff "
      R[$c.sbusy]+="$sbusy "; R[$c.cbusy]+="$cbusy "; R[$c.cus]+="$cus "
      { [ "${bad:-0}" != 0 ] || { [ "$er" != none ] && [ "$er" != 0 ]; }; } && echo "warning: $c m=$m run $i: $bad not 2xx, errors $er" >&2
      echo "  $c m=$m run $i: $r req/s p50 $q50 ms p99 $q99 ms; sluiced $eff req per cpu-s ($((t1 - t0)) ticks, busy $sbusy); client busy $cbusy, $cus cpu-us/req" >&2
    done
  done
  for c in $CASES; do
    read -r md lo hi <<<"$(printf '%s\n' ${R[$c.rps]} | grep -v NA | stats)"
    printf '{"bench":"grpc_vs_http","case":"%s","streams":%s,"conns":%s,"threads":%s,"rps":%s,"rps_min":%s,"rps_max":%s,"p50_ms":%s,"p99_ms":%s,"req_per_cpu_s":%s,"server_busy":%s,"client_busy":%s,"client_cpu_us_per_req":%s,"runs":%s,"dur_s":%s,"pin":%s}\n' \
      "$c" "$m" "$CONNS" "$THREADS" "$md" "$lo" "$hi" "$(printf '%s\n' ${R[$c.p50]} | med)" \
      "$(printf '%s\n' ${R[$c.p99]} | med)" "$(printf '%s\n' ${R[$c.eff]} | med)" "$(printf '%s\n' ${R[$c.sbusy]} | med)" \
      "$(printf '%s\n' ${R[$c.cbusy]} | med)" "$(printf '%s\n' ${R[$c.cus]} | med)" "$RUNS" "$DUR" "$PIN" | tee -a "$OUT/lines"
  done
  unset R
done

echo
awk -F'[:,{}"]+' '
  { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
    key = v["case"] "|" v["streams"]
    rps[key] = v["rps"]; lo[key] = v["rps_min"]; hi[key] = v["rps_max"]
    p50[key] = v["p50_ms"]; p99[key] = v["p99_ms"]; eff[key] = v["req_per_cpu_s"]; order[++n] = key
    sb[key] = v["server_busy"]; cb[key] = v["client_busy"]; cu[key] = v["client_cpu_us_per_req"] }
  END {
    printf "%-5s %7s %10s %22s %8s %8s %10s %10s %10s %12s %6s %6s %9s\n", "case", "streams", "req/s", "[min..max]", "p50 ms", "p99 ms", "req/cpu-s", "grpc/h2", "grpc/h1", "cpu-s g/h2", "s busy", "c busy", "c us/req"
    for (k = 1; k <= n; k++) {
      split(order[k], f, "|"); a = ""; b = ""; e = ""
      if (f[1] == "grpc") {
        if (rps["h2|" f[2]] > 0) a = sprintf("%.2fx", rps[order[k]] / rps["h2|" f[2]])
        if (eff["h2|" f[2]] > 0) e = sprintf("%.2fx", eff[order[k]] / eff["h2|" f[2]])
        if (rps["h1|" f[2]] > 0) b = sprintf("%.2fx", rps[order[k]] / rps["h1|" f[2]])
      }
      printf "%-5s %7s %10d %22s %8s %8s %10s %10s %10s %12s %6s %6s %9s\n", f[1], f[2], rps[order[k]],
        "[" lo[order[k]] ".." hi[order[k]] "]", p50[order[k]], p99[order[k]], eff[order[k]], a, b, e,
        sb[order[k]], cb[order[k]], cu[order[k]] }
  }' "$OUT/lines"
echo "# streams: h2load -m / redis-benchmark -P per connection ($CONNS connections); h1: wrk, conns x streams"
echo "# connections (at most 64); req/cpu-s: requests per CPU second of sluiced (all its threads);"
echo "# s busy, c busy: CPU seconds per second of sluiced and of the client; c us/req: the client's CPU per request;"
echo "# medians of $RUNS alternating runs; raw: $OUT"
