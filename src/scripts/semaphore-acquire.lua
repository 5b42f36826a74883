-- Take `permits` permits of a counting semaphore, all or nothing.
-- KEYS[1]  holders: sorted set, one member "<token>:<i>" per permit, score = expiry (server ms)
-- KEYS[2]  fencing counter (expires as next-fence.lua says)
-- KEYS[3]  release counter: INCR-ed whenever permits are released or reclaimed (waiters track it);
--          its value means nothing, so it expires IDLE_MS after its last change
-- KEYS[4]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[5]  waiters' queue    (optional: direct grants, includes/grant-permits.lua)
-- KEYS[6]  waiters' records  (optional, with KEYS[5])
-- ARGV[1]  owner token (a registered waiter's: the same for its whole wait)
-- ARGV[2]  permits wanted (1..limit)
-- ARGV[3]  limit
-- ARGV[4]  ttl in ms
-- ARGV[5]  with KEYS[5]: this waiter's record "<channel>\n<ttl>\n<epoch>\n<permits>\n<limit>"
-- Returns  {1, fencingToken}         on success
--          {1, fencingToken, epoch}  the permits were granted to this waiter already (a release
--                                    handed them over while this attempt was on its way): its
--                                    validity counts from the send time of attempt `epoch`
--          {0, ms}                   when full: ms until enough permits expire (if nobody releases)
-- Expiry is judged by Redis's clock (TIME), so a client with a skewed clock cannot free permits.
-- Tracking: a full semaphore, and a grant found, end with a read of the release counter, the
-- key waiters listen to. The queue and records are written, not read, when full (as in acquire.lua).
-- A holder listens to nothing but resets (every holder's extension writes the set).
--- @include "next-fence"
FENCE_MARK = KEYS[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n, limit, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) > 0 then
  redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], IDLE_MS)
end
-- Granted, and its permits still unexpired: they are this waiter's lease. (The records are read
-- only then, so that waiters are not armed on a key every registration writes.)
if KEYS[5] and redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':1') then
  local fence, epoch = string.match(redis.call('HGET', KEYS[6], ARGV[1]) or '', '^=(%d+)\n(%d+)$')
  if fence then
    redis.call('HDEL', KEYS[6], ARGV[1])
    -- Claimed: its permits get the full ttl (a grant holds them for the claim window only).
    for i = 1, n do
      redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1] .. ':' .. i)
    end
    if redis.call('PTTL', KEYS[1]) < ttl then
      redis.call('PEXPIRE', KEYS[1], ttl)
    end
    redis.call('EXISTS', KEYS[3])
    return {1, fence, tonumber(epoch)}
  end
  -- Held under this value already (its grant was delivered by the message, and read): never
  -- take the same members twice, or this attempt's give-back would free the lease's permits.
  redis.call('EXISTS', KEYS[3])
  return {0, ttl}
end
local used = redis.call('ZCARD', KEYS[1])
if used + n <= limit then
  for i = 1, n do
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[1] .. ':' .. i)
  end
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  if KEYS[5] then
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('HDEL', KEYS[6], ARGV[1])
  end
  return {1, nextFence(KEYS[2])}
end
if KEYS[5] and ARGV[5] ~= '' then
--- @include "register-waiter"
  registerWaiter(KEYS[5], KEYS[6], ARGV[1], ARGV[5], ttl)
end
-- The (used + n - limit)-th earliest expiry frees enough permits.
local need = used + n - limit
local at = redis.call('ZRANGE', KEYS[1], need - 1, need - 1, 'WITHSCORES')
redis.call('EXISTS', KEYS[3])
return {0, math.max(0, tonumber(at[2]) - now)}
