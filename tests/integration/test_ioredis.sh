#!/bin/sh
# test_ioredis.sh SLUICED NODE_DIR -- ioredis (npm) against a real sluiced.
# ioredis comes from NODE_DIR/node_modules, put there by
# `sh scripts/deps.sh test`; this test never installs anything.
set -eu
sluiced=$1
node_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$node_dir/node_modules/ioredis/package.json" ]; then
  echo "ioredis is not installed in $node_dir/node_modules: run 'sh scripts/deps.sh test' first" >&2
  exit 1
fi
. "$here/start_sluiced.sh"
start_sluiced "$sluiced"
NODE_PATH="$node_dir/node_modules" node "$here/ioredis_check.js" "$port"
kill -TERM $pid
wait $pid
