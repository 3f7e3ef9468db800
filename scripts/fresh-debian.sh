#!/bin/sh
# fresh-debian.sh [STEP...] -- the README's commands as a newcomer meets them:
# on a fresh Debian 12 (debootstrap --variant=minbase bookworm, Debian's
# standard /etc/hosts, nothing else), as root, from a clean clone of this
# repository's committed HEAD. Each step is timed and its result printed:
#   run      sh scripts/deps.sh run && make run; redis-cli -p 6390
#            CL.THROTTLE user123 15 30 60 must print 0 16 15 -1 2
#   test     sh scripts/deps.sh test && make test
#   install  make install; a program built with pkg-config's flags for
#            sluice runs without LD_LIBRARY_PATH (ldconfig was run)
#   package  sh scripts/deps.sh package && make package; dpkg -i of the .deb;
#            the unit's ExecStart= command line with --check-config
# Default: all four, in that order, in one root (install before package: the
# package's library in /usr/lib would hide a missing ldconfig). Exits non-zero if any step
# failed. Run as root on a Debian host (it installs debootstrap if missing).
# It is a check of the set-up, not a way to build or install sluice.
#   ROOT=DIR    where to build the root (default: a new directory in /var/tmp)
#   KEEP=1      keep the root afterwards (it is removed by default)
#   MIRROR=URL  the Debian mirror (default: the one apt is configured with)
# The logs of each step stay in $ROOT.logs/.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
steps=${*:-run test install package}
[ "$(id -u)" = 0 ] || { echo "fresh-debian.sh: run as root (debootstrap, chroot, mount)" >&2; exit 1; }
root=${ROOT:-$(mktemp -d /var/tmp/sluice-fresh.XXXXXX)}
logs=$root.logs
mkdir -p "$root" "$logs"
# mktemp -d makes it 0700; a root directory is 0755, or daemons that drop to
# another user (nginx's workers run as nobody) cannot reach any path in it
chmod 755 "$root"

# The mirror apt already uses for bookworm: a one-line "deb URI bookworm ..."
# or a deb822 stanza whose Suites has bookworm itself.
apt_mirror() {
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /^\[/ || $i ~ /\]$/) i++;
                       if ($(i + 1) == "bookworm") { print $i; exit } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() { if (deb && bookworm && uri != "") { print uri; exit } deb = bookworm = 0; uri = "" }
         /^[ \t]*$/ { flush(); next }
         $1 == "Types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
         $1 == "URIs:" { uri = $2 }
         $1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") bookworm = 1 }
         END { flush() }' "$f"
  done
}

mounted=""
cleanup() {
  # a daemon of the run step that outlived it (interrupted), before the
  # mounts it may hold
  if [ -n "${run_pgid:-}" ]; then kill -TERM "-$run_pgid" 2>/dev/null && sleep 1 || true; fi
  for m in $mounted; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then
    echo "root kept: $root"
  elif [ -z "$(awk -v r="$root" 'index($2, r) == 1' /proc/mounts)" ]; then
    rm -rf "$root"
  else
    echo "root left in place, something is still mounted under it: $root" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

results=""
failed=0
# step NAME COMMAND...: runs it, output to $logs/NAME.log, and records
# "NAME: passed|failed (N s)".
step() {
  name=$1
  shift
  echo "--- $name (log: $logs/$name.log)"
  start=$(date +%s)
  if "$@" >"$logs/$name.log" 2>&1; then verdict=passed; else verdict=failed; failed=$((failed + 1)); fi
  secs=$(($(date +%s) - start))
  line="$name: $verdict ($secs s = $((secs / 60)) min $((secs % 60)) s)"
  echo "$line"
  results="$results$line
"
  [ "$verdict" = passed ]
}
finish() {
  echo
  echo "=== fresh Debian 12 minbase, $(date -u +%Y-%m-%dT%H:%MZ)"
  printf '%s' "$results"
  echo "$(($(printf '%s' "$results" | grep -c ': passed' || true))) passed, $failed failed"
  [ "$failed" = 0 ]
}

in_root() { chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
              PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
              ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=/etc/host-ca.crt} /bin/sh -c "$1"; }

make_root() {
  command -v debootstrap >/dev/null 2>&1 || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; }
  mirror=${MIRROR:-$(apt_mirror | head -1)}
  [ -n "$mirror" ] || { echo "no bookworm mirror in /etc/apt/sources.list*: set MIRROR" >&2; return 1; }
  echo "mirror: $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror"
  # Debian's standard /etc/hosts: localhost is both 127.0.0.1 and ::1
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' \
    >"$root/etc/hosts"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  [ -z "${NODE_EXTRA_CA_CERTS:-}" ] || cp "$NODE_EXTRA_CA_CERTS" "$root/etc/host-ca.crt"
  # The root shares this machine's network: packages must not start their
  # services here (redis-server would take port 6379 of the host), as in any
  # build chroot.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  git clone -q "$repo" "$root/root/sluice"
  git -C "$root/root/sluice" checkout -q "$(git -C "$repo" rev-parse HEAD)"
  for m in proc sys dev dev/pts dev/shm; do
    case $m in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sysfs "$root/sys" ;;
      dev/shm) mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ;;
      *) mount --bind "/$m" "$root/$m" ;;
    esac
    mounted="$root/$m $mounted"
  done
}

# A network that intercepts TLS with its own authority (as some sandboxes
# do) is the host's business, not the fresh system's: node inside is told
# the host's authorities, the way the host's npm is.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

step_run() {
  if command -v ss >/dev/null 2>&1 && ss -Hltn 'sport = :6390' | grep -q .; then
    echo "port 6390 is taken on this machine: the run step needs it"
    return 1
  fi
  # its own process group, so that stopping it stops make and sluiced too
  setsid chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c 'cd /root/sluice && sh scripts/deps.sh run && make run' >"$logs/run-daemon.log" 2>&1 </dev/null &
  run_pgid=$!
  waited=0
  until in_root 'command -v redis-cli >/dev/null && redis-cli -p 6390 PING' 2>/dev/null | grep -q PONG; do
    if ! kill -0 "$run_pgid" 2>/dev/null; then
      echo "make run ended before sluiced answered:"; tail -30 "$logs/run-daemon.log"; return 1
    fi
    [ "$waited" -lt 3600 ] || { echo "sluiced did not answer within an hour"; return 1; }
    sleep 1
    waited=$((waited + 1))
  done
  echo "sluiced answered after $waited s"
  got=$(in_root 'redis-cli -p 6390 CL.THROTTLE user123 15 30 60' | tr '\n' ' ')
  echo "redis-cli -p 6390 CL.THROTTLE user123 15 30 60: $got"
  kill -TERM "-$run_pgid"
  wait "$run_pgid" 2>/dev/null || true
  run_pgid=""
  cat "$logs/run-daemon.log"
  [ "$got" = "0 16 15 -1 2 " ]
}

step_test() { in_root 'cd /root/sluice && sh scripts/deps.sh test && make test'; }

step_install() {
  in_root 'cd /root/sluice && sh scripts/deps.sh run && make install &&
           cc -std=c11 -Wall -Werror tests/integration/use_sluice.c $(pkg-config --cflags --libs sluice) -o /tmp/use_sluice &&
           ldconfig -p | grep libsluice.so.0 && /tmp/use_sluice'
}

step_package() {
  in_root 'cd /root/sluice && sh scripts/deps.sh package && make package' || return 1
  in_root 'cd /root/sluice && deb=$(ls build/sluice_*.deb) && echo "dpkg -i $deb" &&
           { dpkg -i "$deb" || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -f -y -qq; }; } &&
           dpkg -s sluice | grep -q "install ok installed" &&
           ldconfig -p | grep libsluice.so.0 &&
           unit=/lib/systemd/system/sluiced.service &&
           cmd=$(sed -n "s/^ExecStart=//p" $unit) &&
           state=/var/lib/$(sed -n "s/^StateDirectory=//p" $unit) &&
           echo "the unit runs: $cmd (STATE_DIRECTORY=$state, as systemd sets it)" &&
           STATE_DIRECTORY=$state $cmd --check-config | tee /dev/stderr | grep -qx "state: $state/sluice.snap (\$STATE_DIRECTORY)"'
}

step debootstrap make_root || { finish; exit 1; }
for s in $steps; do
  case $s in
    run|test|install|package) step "$s" "step_$s" || true ;;
    *) echo "unknown step $s (run, test, install, package)" >&2; failed=$((failed + 1)) ;;
  esac
done
finish
