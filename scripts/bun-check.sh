#!/usr/bin/env bash
# What Bun does with leasehold: 4 Bun processes x 200 critical sections on one lock, per driver,
# against a private redis-server on a free port (stopped by its pid). The check lives in Redis,
# not in any process's clock: an occupancy counter and the entry order of the fencing tokens.
# Prints the Bun version, overlaps and out-of-order tokens; exits 1 on either. A check by hand
# beside the integration suite CI runs on Bun (`node scripts/test.mjs bun`). Use: bash scripts/bun-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/runtimes.sh bun >/dev/null
bun="$PWD/.runtimes/bun/bin/bun"
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
echo "Bun $("$bun" --version), $(redis-server --version | cut -d' ' -f1-3)"
# Why a cross-process checker must not use process.hrtime under Bun: what a fresh process reads.
clock='console.log((Number(process.hrtime.bigint()) / 1e6).toFixed(1))'
echo "process.hrtime in a fresh process: Bun $("$bun" -e "$clock") ms, Node $(node -e "$clock") ms (host uptime $(cut -d' ' -f1 /proc/uptime) s)"
status=0
for driver in node-redis ioredis; do
  prefix="bun-check-$driver-$$"
  pids=()
  for _ in 1 2 3 4; do
    "$bun" test/runtimes/bun-mutex-worker.ts "redis://127.0.0.1:$port" "$prefix" 200 "$driver" >"/tmp/$prefix.$_.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  overlaps=$(cat /tmp/"$prefix".*.log | sed -n 's/.*"overlaps":\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  modes=$(cat /tmp/"$prefix".*.log | sed -n 's/.*"notifications":"\([a-z]*\)".*/\1/p' | sort -u | paste -sd,)
  read -r entries disorder < <(redis-cli -p "$port" LRANGE "$prefix:check:log" 0 -1 |
    awk 'NR > 1 && $1 + 0 <= prev + 0 { bad++ } { prev = $1 } END { print NR, bad + 0 }')
  rm -f /tmp/"$prefix".*.log
  echo "$driver: $entries sections, overlaps ${overlaps:-?}, fencing tokens out of entry order $disorder, notifications $modes"
  [ "${overlaps:-1}" = 0 ] && [ "$disorder" = 0 ] && [ "$entries" = 800 ] || status=1
done
exit $status
