-- Take a read lease if no writer holds the lock and no writer is waiting (writer preference).
-- KEYS[1]  writer key: the writer's token, with a TTL
-- KEYS[2]  readers: sorted set, member = reader token, score = expiry (server ms)
-- KEYS[3]  waiting writers: sorted set, member = writer token, score = deadline (server ms)
-- KEYS[4]  fencing counter, shared by readers and writers (expires as next-fence.lua says)
-- KEYS[5]  reader-release counter: INCR-ed when readers leave (waiting writers track it); its
--          value means nothing, so it expires IDLE_MS after its last change
-- ARGV[1]  reader token
-- ARGV[2]  ttl in ms
-- Returns  {1, fencingToken} on success
--          {0, ms}           when blocked: ms until the writer's TTL or the first waiting
--                            writer's deadline runs out (a fallback; releases are pushed)
-- Tracking: a blocked reader has read the writer key and (unless a writer holds) the waiting
-- writers, the keys its wait listens to. A reader's lease listens to nothing but resets.
--- @include "next-fence"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
if redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) > 0 then
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], IDLE_MS)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local writer = redis.call('PTTL', KEYS[1])
if writer ~= -2 then
  return {0, writer}
end
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if first[1] then
  return {0, math.max(0, tonumber(first[2]) - now)}
end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return {1, nextFence(KEYS[4])}
