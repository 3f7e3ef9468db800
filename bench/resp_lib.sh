# shellcheck shell=bash
# resp_lib.sh -- what bench/resp_vs_redis.sh and bench/resp_cpu.sh share:
# sluiced's configuration (the RESP front alone and the one limit every
# case has, as Redis's Lua script has it) and a redis-server without
# persistence. Source it after the peer kit's common.sh (start_bg,
# wait_port); SRV_PIN is the servers' pinning. Not a benchmark itself.

# resp_bench_yaml FILE PORT: 100 per second with a burst of 100
resp_bench_yaml() {
  cat >"$1" <<EOF2
listen: {resp: 127.0.0.1:$2, http: off}
limits: {max_connections: 1000}
policies:
  - name: bench
    limits: [{algorithm: gcra, limit: 100, period: 1s, burst: 99}]
EOF2
}

# start_bench_redis DIR PORT: redis-server on 127.0.0.1:PORT, its log and
# working directory in DIR; returns once it listens
start_bench_redis() {
  start_bg redis "$1/redis.log" "${SRV_PIN[@]}" redis-server --port "$2" --bind 127.0.0.1 \
    --save "" --appendonly no --daemonize no --dir "$1" --protected-mode yes
  wait_port 127.0.0.1 "$2"
}
