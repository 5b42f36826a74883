-- Take the write lease if no writer and no reader holds the lock. Otherwise register (or
-- refresh) this writer as waiting, which keeps new readers out until it gets in or gives up.
-- KEYS[1]  writer key: the writer's token, with a TTL
-- KEYS[2]  readers sorted set (token -> expiry, server ms)
-- KEYS[3]  waiting writers sorted set (token -> deadline, server ms)
-- KEYS[4]  fencing counter, shared by readers and writers (expires as next-fence.lua says)
-- KEYS[5]  reader-release counter (expires IDLE_MS after its last change)
-- ARGV[1]  writer token (stable while this writer waits)
-- ARGV[2]  ttl in ms (of the lease, and of the waiting registration)
-- KEYS[6]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[7]  waiting writers' records (optional: direct grants, includes/grant-writer.lua)
-- ARGV[3]  '1' to register as waiting when blocked, '0' for a single attempt (tryWrite)
-- ARGV[4]  with KEYS[7]: this writer's record "<channel>\n<ttl>\n<epoch>"
-- Returns  {1, fencingToken} on success
--          {1, fencingToken, epoch}  a release granted it the lease while this attempt was on
--                            its way: validity counts from the send time of attempt `epoch`
--          {0, ms}           when blocked: ms until the writer's TTL or the last reader's
--                            expiry (a fallback; releases are pushed)
-- Tracking: a holder ends with a read of the writer key; a blocked writer with reads of the
-- writer key and the reader-release counter, the two keys its wait listens to.
--- @include "next-fence"
FENCE_MARK = KEYS[6]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local records = KEYS[7]
if records and redis.call('GET', KEYS[1]) == ARGV[1] then
  local fence, epoch = string.match(redis.call('HGET', records, ARGV[1]) or '', '^=(%d+)\n(%d+)$')
  if fence then
    redis.call('HDEL', records, ARGV[1])
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PTTL', KEYS[1])
    return {1, fence, tonumber(epoch)}
  end
  -- Its own lease without a record: the grant's message delivered it already.
  redis.call('EXISTS', KEYS[5])
  return {0, redis.call('PTTL', KEYS[1])}
end
if redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) > 0 then
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], IDLE_MS)
end
if records then
--- @include "grant-writer"
  dropExpiredWriters(KEYS[3], records, now)
else
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
end
local writer = redis.call('PTTL', KEYS[1])
if writer == -2 and redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  redis.call('ZREM', KEYS[3], ARGV[1])
  if records then
    redis.call('HDEL', records, ARGV[1])
  end
  local fence = nextFence(KEYS[4])
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
  if redis.call('PTTL', KEYS[3]) < ttl then
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
  if records and ARGV[4] ~= '' then
    -- Kept twice the TTL: a registered writer attempts again at least every third of it.
    redis.call('HSET', records, ARGV[1], ARGV[4])
    if redis.call('PTTL', records) < ttl * 2 then
      redis.call('PEXPIRE', records, ttl * 2)
    end
  end
end
redis.call('EXISTS', KEYS[5])
if writer ~= -2 then
  return {0, writer}
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
return {0, math.max(0, tonumber(last[2]) - now)}
