#!/bin/sh
# test_ioredis.sh SLUICED NPM_DIR -- ioredis (npm) against a real sluiced.
# ioredis is installed into NPM_DIR (in the build tree) the first time.
set -eu
sluiced=$1
npm_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$npm_dir/node_modules/ioredis" ]; then
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error ioredis@5 >/dev/null
fi
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
"$sluiced" --resp 127.0.0.1:0 >"$dir/log" 2>&1 &
pid=$!
port=""
for _ in $(seq 200); do
  port=$(sed -n 's/.* ready: resp=[^ ]* port=\([0-9]*\).*/\1/p' "$dir/log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { cat "$dir/log"; exit 1; }
NODE_PATH="$npm_dir/node_modules" node "$here/ioredis_check.js" "$port"
kill -TERM $pid
wait $pid
