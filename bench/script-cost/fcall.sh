#!/usr/bin/env bash
# FCALL (a Redis function) against EVALSHA (a cached script), same Lua body: floor.lua (SET NX PX,
# then DEL so that every call takes the granted path). Server-side usec_per_call from
# `INFO commandstats` over 200,000 calls each, alternating, three rounds, on a private redis-server
# on a free port, stopped by its pid. Functions need Redis >= 7.0 (or Valkey).
# Use: bash bench/script-cost/fcall.sh [redis-server binary]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/script-cost/server.sh
source "$here/server.sh"
body=$(grep -v '^--' "$here/floor.lua")
redis-cli -p "$port" FUNCTION LOAD "#!lua name=leasehold_bench
redis.register_function('floor', function(KEYS, ARGV)
$body
end)" >/dev/null
sha=$(redis-cli -p "$port" SCRIPT LOAD "$body")
per() { redis-cli -p "$port" INFO commandstats | sed -n "s/.*cmdstat_$1:.*usec_per_call=\([0-9.]*\).*/\1/p"; }
for round in 1 2 3; do
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  redis-benchmark -p "$port" -n 200000 -c 8 -q EVALSHA "$sha" 2 lock fence token 10000 >/dev/null 2>&1
  evalsha=$(per evalsha)
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  redis-benchmark -p "$port" -n 200000 -c 8 -q FCALL floor 2 lock fence token 10000 >/dev/null 2>&1
  printf 'round %d: EVALSHA %s us, FCALL %s us per call (server time)\n' "$round" "$evalsha" "$(per fcall)"
done
