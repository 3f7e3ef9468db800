# start_sluiced.sh -- sourced by the shell integration tests:
#   start_sluiced SLUICED [ARGS...]   starts it on a free port; sets $pid, $port, $dir
# and stops it (SIGTERM) on exit.
start_sluiced() {
  _sluiced=$1
  shift
  dir=$(mktemp -d)
  trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
  # the log exists before the daemon: the background job opens it in its own
  # time, and the first look below may come first (sed: can't read .../log)
  : >"$dir/log"
  # both ports free ones: the built-in default listens for HTTP on 8090,
  # which two tests running at once would fight over; in $dir, where its
  # state file (sluice.snap) goes by default
  (cd "$dir" && exec "$_sluiced" --resp 127.0.0.1:0 --http 127.0.0.1:0 "$@") >"$dir/log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 200); do
    port=$(sed -n 's/.* ready: resp=[^ ]* port=\([0-9]*\).*/\1/p' "$dir/log")
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  cat "$dir/log"
  exit 1
}
