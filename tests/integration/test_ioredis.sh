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
. "$here/start_sluiced.sh"
start_sluiced "$sluiced"
NODE_PATH="$npm_dir/node_modules" node "$here/ioredis_check.js" "$port"
kill -TERM $pid
wait $pid
