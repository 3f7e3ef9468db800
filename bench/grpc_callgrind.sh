#!/usr/bin/env bash
# grpc_callgrind.sh -- instructions per gRPC ShouldRateLimit and per HTTP/2
# /v1/check, counted by callgrind (machine load does not change them).
#
# For each case, one sluiced (threads 1, the bench policy of
# grpc_vs_http.sh) runs under `valgrind --tool=callgrind`; h2load sends N
# requests (-t1 -c8 -m64) to one front, then sluiced is stopped. An idle
# run (started, nothing sent, stopped) is subtracted, and what is left is
# divided by N, in total and object by object (self cost: each
# instruction counted once, in the object that ran it).
#
#   bench/grpc_callgrind.sh                       # build/sluiced, N=20000
#   SLUICED=/tmp/sluiced-old bench/grpc_callgrind.sh   # another build
#
# Knobs: SLUICED (build/sluiced), N (20000), CASES ("grpc h2"), ports
# RESP_PORT (19100), HTTP_PORT (19101), GRPC_PORT (19102).
set -eu
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SLUICED=${SLUICED:-$ROOT/build/sluiced}
N=${N:-20000}
CASES=${CASES:-"grpc h2"}
RESP_PORT=${RESP_PORT:-19100}
HTTP_PORT=${HTTP_PORT:-19101}
GRPC_PORT=${GRPC_PORT:-19102}
OUT=$(mktemp -d /tmp/grpc-callgrind.XXXXXX)
RLS_PATH=/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit

python3 - "$OUT/rls.bin" <<'PY'
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
PY
cat >"$OUT/sluice.yaml" <<YAML
listen: {resp: 127.0.0.1:$RESP_PORT, http: 127.0.0.1:$HTTP_PORT, grpc: 127.0.0.1:$GRPC_PORT}
limits: {max_connections: 10000}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 1000000, period: 1s, burst: 1000}]
YAML

# a port already taken would send the requests to another server
for p in "$RESP_PORT" "$HTTP_PORT" "$GRPC_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is already in use: set RESP_PORT, HTTP_PORT, GRPC_PORT" >&2
    exit 1
  fi
done

wait_port() {
  for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "port $1 never opened" >&2
  return 1
}

# run NAME: sluiced under callgrind, the case's requests (none for idle)
run() {
  local name=$1
  valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$name" "$SLUICED" --snapshot off \
    --config "$OUT/sluice.yaml" --threads 1 >"$OUT/$name.log" 2>&1 &
  local pid=$!
  wait_port "$GRPC_PORT"
  wait_port "$HTTP_PORT"
  case $name in
    grpc) h2load -t1 -c8 -m64 -n"$N" -d "$OUT/rls.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
            "http://127.0.0.1:$GRPC_PORT$RLS_PATH" >"$OUT/h2load.$name" ;;
    h2)   h2load -t1 -c8 -m64 -n"$N" "http://127.0.0.1:$HTTP_PORT/v1/check?policy=bench&key=k%3D1" \
            >"$OUT/h2load.$name" ;;
  esac
  kill -TERM "$pid"
  wait "$pid" || true
  if [ "$name" != idle ]; then
    grep -q "$N succeeded" "$OUT/h2load.$name" || { echo "$name: not every request succeeded" >&2; cat "$OUT/h2load.$name" >&2; }
  fi
}

# self cost per object of a callgrind file: "object instructions" lines
per_object() {
  python3 - "$1" <<'PY'
import re, sys, collections
names, cost = {}, collections.Counter()
ob, skip = "?", False
def name(kind, v):
    m = re.match(r"\((\d+)\)(?: (.*))?", v)
    if not m:
        return v
    if m.group(2) is not None:
        names[(kind, m.group(1))] = m.group(2)
    return names.get((kind, m.group(1)), v)
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        ob = name("ob", line[3:])
    elif line.startswith("cob="):
        name("ob", line[4:])
    elif line.startswith("calls="):
        skip = True
    elif line and (line[0].isdigit() or line[0] in "+-*"):
        if skip:
            skip = False
            continue
        parts = line.split()
        if len(parts) >= 2:
            cost[ob] += int(parts[1])
for o, c in cost.most_common():
    print(o, c)
PY
}

run idle
for c in $CASES; do run "$c"; done
per_object "$OUT/cg.idle" >"$OUT/obj.idle"
echo "# $("$SLUICED" --version); N=$N requests per case (h2load -t1 -c8 -m64); an idle run subtracted; raw: $OUT"
for c in $CASES; do
  per_object "$OUT/cg.$c" >"$OUT/obj.$c"
  echo "## $c: instructions per request, by object"
  awk -v n="$N" 'NR == FNR { idle[$1] = $2; next }
    { d = ($2 - idle[$1]) / n; total += d; if (d >= 50) printf "%10.0f  %s\n", d, $1 }
    END { printf "%10.0f  total\n", total }' "$OUT/obj.idle" "$OUT/obj.$c"
done
