#!/bin/sh
# Installs the Debian packages a target needs, only those missing. Plain
# sh and dpkg only: on a fresh Debian 12 it runs before make exists (the
# README's commands call it first).
#   scripts/deps.sh run    build and run
#   scripts/deps.sh test   build and run every test
#   scripts/deps.sh bench  the benchmarks against the peers (redis-server, nginx, wrk)
set -eu
# libssl-dev: h2o.h includes <openssl/ssl.h>, yet Debian's libh2o-dev does
# not depend on it
build="cmake make gcc pkg-config libxxhash-dev libuv1-dev libcyaml-dev libyaml-dev libh2o-dev libssl-dev libhiredis-dev"
case "${1:-test}" in
  run)  want="$build redis-tools curl" ;;
  test) want="$build libcmocka-dev clang libclang-rt-dev python3 python3-redis redis-server redis-tools curl nginx ca-certificates" ;;
  bench) want="$build redis-server redis-tools nginx wrk curl" ;;
  *) echo "usage: $0 run|test|bench" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm (for the ioredis test) may come with another nodejs build than
# Debian's: what matters is the command.
if [ "${1:-test}" = test ] && ! command -v npm >/dev/null 2>&1; then
  missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
  exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends $missing
