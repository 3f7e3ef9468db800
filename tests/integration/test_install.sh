#!/bin/sh
# Installs into a scratch prefix and builds a program against the installed
# header, shared library and sluice.pc, the way a user of libsluice would.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc_dir=$(dirname "$(find "$prefix" -name sluice.pc)")
export PKG_CONFIG_PATH="$pc_dir"
sed -i "s|^prefix=.*|prefix=$prefix|" "$pc_dir/sluice.pc"
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags sluice) "$src/tests/integration/use_sluice.c" \
   -o "$prefix/use_sluice" $(pkg-config --libs sluice)
LD_LIBRARY_PATH="$(dirname "$(find "$prefix" -name 'libsluice.so' | head -1)")" "$prefix/use_sluice"
test -x "$prefix/bin/sluice" && test -x "$prefix/bin/sluice-bench"
echo "install: header, library, sluice.pc and programs work"
