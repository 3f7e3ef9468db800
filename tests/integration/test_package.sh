#!/bin/sh
# test_package.sh BUILD_DIR -- builds the Debian package (CPack) of BUILD_DIR
# and checks what an operator gets: the files, the conffile, ldconfig in the
# maintainer scripts, Depends, the systemd unit's settings, and the unit's
# ExecStart= command line, run from the unpacked package with --check-config
# on the shipped /etc/sluice/sluice.yaml. `dpkg -i` in a fresh root is
# scripts/fresh-debian.sh's (it needs a root of its own).
set -eu
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "package: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; fail "cpack failed"; }
deb=$(ls "$out"/sluice_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no sluice_*.deb made in $out"
echo "built $(basename "$deb")"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$out/files"
for f in /usr/bin/sluiced /usr/bin/sluice /usr/lib/libsluice.so.0 /usr/include/sluice.h \
         /usr/lib/pkgconfig/sluice.pc /etc/sluice/sluice.yaml /lib/systemd/system/sluiced.service; do
  grep -qx "$f" "$out/files" || fail "$f is not in the package"
done

mkdir "$out/control"
dpkg-deb -e "$deb" "$out/control"
grep -qx /etc/sluice/sluice.yaml "$out/control/conffiles" || fail "/etc/sluice/sluice.yaml is not a conffile"
for s in postinst postrm; do
  [ -x "$out/control/$s" ] || fail "no executable $s"
  grep -q '^ *ldconfig' "$out/control/$s" || fail "$s does not run ldconfig"
done
# dpkg-shlibdeps found the libraries the programs link, when it is there
if command -v dpkg-shlibdeps >/dev/null 2>&1; then
  dpkg-deb -f "$deb" Depends | grep -q 'libuv1' || fail "Depends misses the runtime libraries: $(dpkg-deb -f "$deb" Depends)"
fi

root="$out/root"
dpkg-deb -x "$deb" "$root"
grep -qx 'prefix=/usr' "$root/usr/lib/pkgconfig/sluice.pc" || fail "sluice.pc does not name /usr"
unit="$root/lib/systemd/system/sluiced.service"
for line in StateDirectory=sluice DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict \
            Restart=on-failure 'ExecReload=/bin/kill -HUP $MAINPID' \
            'ExecStart=/usr/bin/sluiced --config /etc/sluice/sluice.yaml'; do
  grep -qxF "$line" "$unit" || fail "the unit lacks '$line'"
done

# The unit's own command line, its absolute paths taken inside the
# unpacked package.
cmd=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$cmd" ] || fail "no ExecStart= in the unit"
here_cmd=$(printf '%s\n' "$cmd" | sed "s| /| $root/|g; s|^/|$root/|")
echo "ExecStart=$cmd  ->  $here_cmd --check-config"
$here_cmd --check-config || fail "the unit's command line with --check-config failed"

# systemd's own reading of the unit, where systemd is installed
if command -v systemd-analyze >/dev/null 2>&1; then
  sed "s|=/usr/bin/sluiced |=$root/usr/bin/sluiced |" "$unit" >"$out/sluiced.service"
  systemd-analyze verify "$out/sluiced.service" >"$out/verify.log" 2>&1 || true
  if grep -Ei 'unknown|failed to parse|invalid|not executable|ignoring' "$out/verify.log"; then
    fail "systemd-analyze verify finds fault with the unit"
  fi
fi
echo "package: files, conffile, ldconfig, Depends, unit and its ExecStart --check-config: ok"
