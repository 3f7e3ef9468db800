#!/bin/sh
# Installs what a target needs: the Debian packages that are missing, and
# for `test` the Node clients into tests/integration/node/node_modules (so no
# test ever reaches the network). Plain sh and dpkg only: on a fresh Debian 12
# (debootstrap --variant=minbase) it runs before make exists (the README's
# commands call it first). Not an installer of sluice itself.
#   scripts/deps.sh run      build the programs (make all SL_TESTS=OFF) and try them
#   scripts/deps.sh test     build everything and run every test stage (make test)
#   scripts/deps.sh package  build the Debian package (make package)
#   scripts/deps.sh bench    the benchmarks against the peers (redis-server, nginx, wrk)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# apt-get install --no-install-recommends brings gcc without the C library's
# headers and start files: libc6-dev is named. libssl-dev: h2o.h includes
# <openssl/ssl.h>, yet Debian's libh2o-dev does not depend on it. The gRPC
# front: nghttp2 (its HTTP/2) and protobuf-c (protoc-c generates its
# messages).
build="cmake make gcc libc6-dev pkg-config libxxhash-dev libuv1-dev libcyaml-dev libyaml-dev libh2o-dev libssl-dev libhiredis-dev libnghttp2-dev protobuf-c-compiler libprotobuf-c-dev"
# The status page is tested in a headless Chromium driven by selenium
# (test_status_page.py).
# CPack's DEB generator needs `file` to find the ELF files and dpkg-shlibdeps
# (dpkg-dev) to turn their libraries into the package's Depends.
package="dpkg-dev file"
target=${1:-test}
case "$target" in
  run)     want="$build redis-tools curl" ;;
  test)    want="$build $package libcmocka-dev clang libclang-rt-dev python3 python3-redis python3-yaml python3-grpcio python3-protobuf protobuf-compiler redis-server redis-tools curl nginx haproxy ca-certificates chromium chromium-driver python3-selenium tmux strace" ;;
  package) want="$build $package" ;;
  bench)   want="$build redis-server redis-tools nginx wrk curl nghttp2-client" ;;
  *) echo "usage: $0 run|test|package|bench" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm may come with another nodejs build than Debian's (one that bundles
# npm): what matters is the command.
if [ "$target" = test ] && ! command -v npm >/dev/null 2>&1; then
  missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing Debian packages:$missing (run as root, or: sudo apt-get install --no-install-recommends$missing)" >&2
    exit 1
  fi
  echo "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  apt-get install -y -qq --no-install-recommends $missing
fi

# The Node clients, exactly as locked in package-lock.json. A stamp (a copy
# of the lock) says which lock node_modules was installed from, so a second
# run installs nothing and a changed lock installs again.
if [ "$target" = test ]; then
  node_dir="$here/../tests/integration/node"
  stamp="$node_dir/node_modules/.installed-from-lock"
  if ! cmp -s "$node_dir/package-lock.json" "$stamp" 2>/dev/null; then
    echo "installing the Node test clients into tests/integration/node/node_modules"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$node_dir/package-lock.json" "$stamp"
  fi
fi
