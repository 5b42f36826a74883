--- @include "idle"
--- @include "fence-mark"
-- nextFence(key): the next fencing token from the counter at `key`, as a Lua number. INCR, seeded
-- when the counter is missing (first use, expiry, or a restart without persistence lost it) with
-- max(server time in microseconds, FENCE_MARK's value): above every token the counter ever
-- handed out, whatever the server's clock did since (includes/fence-mark.lua). Seeding only then,
-- instead of max(last + 1, TIME) on every call, costs Redis 0.6 instead of 3.2 us per token
-- (docs/benchmarks-history.md, "The acquire script's server time"); the hot path stays one INCR and two comparisons, and
-- one token in FENCE_STEP raises the mark (a GET and a SET).
-- The seed is written with an absolute expiry derived from its own value, floor(seed / 1000) + 1 +
-- IDLE_MS (ms), and INCR keeps a key's expiry: the hot path adds no command. The mark, not the
-- expiry, keeps tokens increasing; the expiry only bounds memory, and, should the mark be lost
-- too (eviction, a restart without persistence), it still makes a re-seed read a clock past
-- seed + IDLE_MS * 1000 us unless the clock went back.
-- The counter is only written, never read, and nobody needs to hear of it or of the mark (a
-- re-seed reads the mark, then writes it). Redis 7.0 arms every declared key of a script that
-- reads anything, the mark too: a write to it reaches such connections as a push nobody listens to.
-- Store a token with string.format('%.0f', token): Redis turns a Lua number argument into a
-- string with 14 significant digits, which would round a 16-digit token.
local function nextFence(key)
  local fence = redis.call('INCR', key)
  if fence == 1 then
    local high = tonumber(redis.call('GET', FENCE_MARK) or '0')
    local now = redis.call('TIME')
    fence = math.max(tonumber(now[1]) * 1000000 + tonumber(now[2]), high)
    local expiry = math.floor(fence / 1000) + 1 + IDLE_MS
    redis.call('SET', key, string.format('%.0f', fence), 'PXAT', string.format('%.0f', expiry))
    redis.call('SET', FENCE_MARK, string.format('%.0f', fence + FENCE_STEP))
  elseif fence % FENCE_STEP == 0 then
    local upto = fence + FENCE_STEP
    if tonumber(redis.call('GET', FENCE_MARK) or '0') < upto then
      redis.call('SET', FENCE_MARK, string.format('%.0f', upto))
    end
  end
  return fence
end
