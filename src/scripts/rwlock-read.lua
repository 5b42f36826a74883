-- Take a read lease if no writer holds the lock and no writer is waiting (writer preference).
-- KEYS[1]  writer key: the writer's token, with a TTL
-- KEYS[2]  readers: sorted set, member = reader token, score = expiry (server ms)
-- KEYS[3]  waiting writers: sorted set, member = writer token, score = deadline (server ms)
-- KEYS[4]  fencing counter, shared by readers and writers (expires as next-fence.lua says)
-- KEYS[5]  reader-release counter: INCR-ed when readers leave (waiting writers track it); its
--          value means nothing, so it expires IDLE_MS after its last change
-- ARGV[1]  reader token (a registered reader's: the same for its whole wait)
-- ARGV[2]  ttl in ms
-- KEYS[6]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[7]  waiting readers' queue    (optional: direct grants, includes/grant-readers.lua)
-- KEYS[8]  waiting readers' records  (optional, with KEYS[7])
-- ARGV[3]  with KEYS[7]: this reader's record "<channel>\n<ttl>\n<epoch>"
-- Returns  {1, fencingToken} on success
--          {1, fencingToken, epoch}  a release granted it a read lease while this attempt was
--                            on its way: validity counts from the send time of attempt `epoch`
--          {0, ms}           when blocked: ms until the writer's TTL or the first waiting
--                            writer's deadline runs out (a fallback; releases are pushed)
-- Tracking: a blocked reader has read the writer key and (unless a writer holds) the waiting
-- writers, the keys its wait listens to; the queue and records are written last. A reader's
-- lease listens to nothing but resets.
--- @include "next-fence"
FENCE_MARK = KEYS[6]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
if redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) > 0 then
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], IDLE_MS)
end
-- Granted while this attempt was on its way, and still unexpired: that read lease is this
-- reader's. (The readers are read only then, and the records written after they are read, so
-- that a waiting reader is armed on neither: every reader's extension writes the one, every
-- registration the other.)
if KEYS[7] then
  local fence, epoch = string.match(redis.call('HGET', KEYS[8], ARGV[1]) or '', '^=(%d+)\n(%d+)$')
  if fence then
    redis.call('HDEL', KEYS[8], ARGV[1])
    if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
      -- Claimed: the read lease gets the full ttl (a grant holds it for the claim window only).
      redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
      if redis.call('PTTL', KEYS[2]) < ttl then
        redis.call('PEXPIRE', KEYS[2], ttl)
      end
      return {1, fence, tonumber(epoch)}
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local hint
local writer = redis.call('PTTL', KEYS[1])
if writer ~= -2 then
  hint = writer
else
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if first[1] then
    hint = math.max(0, tonumber(first[2]) - now)
  end
end
if hint then
  if KEYS[7] and ARGV[3] ~= '' then
--- @include "register-waiter"
    registerWaiter(KEYS[7], KEYS[8], ARGV[1], ARGV[3], ttl)
  end
  return {0, hint}
end
-- NX: a registered reader whose grant its message delivered (and an earlier attempt read) holds
-- under this value already: never add it twice, or this attempt's give-back would end that lease.
if redis.call('ZADD', KEYS[2], 'NX', now + ttl, ARGV[1]) == 0 then
  return {0, ttl}
end
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if KEYS[7] then
  redis.call('ZREM', KEYS[7], ARGV[1])
  redis.call('HDEL', KEYS[8], ARGV[1])
end
return {1, nextFence(KEYS[4])}
