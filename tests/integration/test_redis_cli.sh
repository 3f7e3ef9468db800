#!/bin/sh
# test_redis_cli.sh SLUICED -- the real redis-cli against a real sluiced.
set -eu
. "$(dirname "$0")/start_sluiced.sh"
start_sluiced "$1" --test-clock=1000000000
cli() { redis-cli -p "$port" "$@"; }
expect() { got=$(cli "$@" | tr '\n' ' '); [ "$got" = "$want" ] || { echo "redis-cli $*: got '$got', want '$want'"; exit 1; }; }
want="PONG ";                  expect PING
want="0 16 15 -1 2 ";          expect CL.THROTTLE user123 15 30 60
want="0 16 14 -1 4 ";          expect CL.THROTTLE user123 15 30 60
want="0 16 13 -1 6 ";          expect GCRA user123 15 30 60
cli SL.POLICIES >/dev/null
cli INFO server | grep -q '^sluice_version:'
cli --no-raw SL.CHECK nope k | grep -q 'no policy named'
kill -TERM $pid
wait $pid
echo "redis-cli: PING, CL.THROTTLE, GCRA, SL.POLICIES, INFO, errors: ok"
