#!/usr/bin/env bash
# Server time of the mutex acquire script, variant by variant: `INFO commandstats` usec_per_call of
# EVALSHA over 200,000 granted acquisitions (each variant ends with a DEL of the lock key, so every
# call takes the granted path), on a private redis-server on a free port, stopped by its pid.
#   floor.lua   SET NX PX only: what any script costs
#   before.lua  the fencing token as max(last + 1, TIME in us) on every acquisition (until 2026-11-23)
#   inline.lua  INCR, seeded from TIME only when the counter is missing, written inline
#   now.lua     the same through src/scripts/includes/next-fence.lua, as src/scripts/acquire.lua runs it
#   token       now.lua storing a bare 22-character token (before owner metadata, 2026-11-23)
#   stamped     now.lua storing the token with its owner stamp, as leasehold does since (84 bytes here:
#               `<token>~<since>~<host:pid:title>`, docs/inspection.md)
# Use: bash bench/script-cost/run.sh [redis-server binary]   (e.g. .servers/valkey-8.0/redis-server)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/script-cost/server.sh
source "$here/server.sh"
# Includes expanded as the library's loader expands them (src/scripts/index.ts): next-fence, then
# the idle include it starts with.
includes="$here/../../src/scripts/includes"
expand() {
  sed -e '/^--- @include "next-fence"$/{r '"$includes"'/next-fence.lua' -e 'd}' "$1" |
    sed -e '/^--- @include "idle"$/{r '"$includes"'/idle.lua' -e 'd}'
}
for variant in floor before inline now; do
  sha=$(redis-cli -p "$port" SCRIPT LOAD "$(expand "$here/$variant.lua")")
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  redis-benchmark -p "$port" -n 200000 -c 8 -q EVALSHA "$sha" 2 lock fence token 10000 >/dev/null 2>&1
  per=$(redis-cli -p "$port" INFO commandstats | sed -n 's/.*cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
  printf '%-7s %s us per acquisition (server time)\n' "$variant" "$per"
done
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(expand "$here/now.lua")")
token=AAAAAAAAAAAAAAAAAAAAAA
stamped="$token~mieb1x2c~build-host-01.example:123456:node /srv/app/worker.js"
for variant in token stamped; do
  value=${!variant}
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  redis-benchmark -p "$port" -n 200000 -c 8 -q EVALSHA "$sha" 2 lock fence "$value" 10000 >/dev/null 2>&1
  per=$(redis-cli -p "$port" INFO commandstats | sed -n 's/.*cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
  printf '%-7s %s us per acquisition (server time, value of %d bytes)\n' "$variant" "$per" "${#value}"
done
