-- Take `permits` permits of a counting semaphore, all or nothing.
-- KEYS[1]  holders: sorted set, one member "<token>:<i>" per permit, score = expiry (server ms)
-- KEYS[2]  fencing counter (expires as next-fence.lua says)
-- KEYS[3]  release counter: INCR-ed whenever permits are released or reclaimed (waiters track it);
--          its value means nothing, so it expires IDLE_MS after its last change
-- ARGV[1]  owner token
-- ARGV[2]  permits wanted (1..limit)
-- ARGV[3]  limit
-- ARGV[4]  ttl in ms
-- Returns  {1, fencingToken}    on success
--          {0, ms}              when full: ms until enough permits expire (if nobody releases)
-- Expiry is judged by Redis's clock (TIME), so a client with a skewed clock cannot free permits.
-- Tracking: a full semaphore ends with a read of the release counter, the key waiters listen to.
-- A holder listens to nothing but resets (every holder's extension writes the set).
--- @include "next-fence"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n, limit, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) > 0 then
  redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], IDLE_MS)
end
local used = redis.call('ZCARD', KEYS[1])
if used + n <= limit then
  for i = 1, n do
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[1] .. ':' .. i)
  end
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return {1, nextFence(KEYS[2])}
end
-- The (used + n - limit)-th earliest expiry frees enough permits.
local need = used + n - limit
local at = redis.call('ZRANGE', KEYS[1], need - 1, need - 1, 'WITHSCORES')
redis.call('EXISTS', KEYS[3])
return {0, math.max(0, tonumber(at[2]) - now)}
