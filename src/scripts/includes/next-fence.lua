--- @include "idle"
-- nextFence(key): the next fencing token from the counter at `key`, as a Lua number. INCR, seeded
-- with the server time in microseconds when the counter is missing (first use, expiry, or a
-- restart without persistence lost it). Seeding only then, instead of max(last + 1, TIME) on every
-- call, costs Redis 0.6 instead of 3.2 us per token (docs/benchmarks.md, "acquire script").
-- The seed is written with an absolute expiry derived from its own value, floor(seed / 1000) + 1 +
-- IDLE_MS (ms), and INCR keeps a key's expiry: the hot path adds no command. The counter can only
-- expire once the server's clock reads at least that, so the TIME a re-seed reads then exceeds
-- seed + IDLE_MS * 1000 us, above every token drawn from the old counter unless IDLE_MS * 1000 of
-- them were drawn in its life (one per microsecond). A wall-clock step back only makes the counter
-- live longer (docs/safety.md, "Counters that expire"). Lost without expiring (a restart without
-- persistence, eviction), it is re-seeded as before: then the clock must not have gone back.
-- The counter is only written, never read: no tracking rule arms it, and nobody needs to hear of it.
-- Store a token with string.format('%.0f', token): Redis turns a Lua number argument into a
-- string with 14 significant digits, which would round a 16-digit token.
local function nextFence(key)
  local fence = redis.call('INCR', key)
  if fence == 1 then
    local now = redis.call('TIME')
    fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
    local expiry = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + 1 + IDLE_MS
    redis.call('SET', key, string.format('%.0f', fence), 'PXAT', string.format('%.0f', expiry))
  end
  return fence
end
