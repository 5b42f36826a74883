-- Acquire a mutex if it is free; a waiter that will wait registers for a direct grant.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (advanced once per successful acquisition; expires as next-fence.lua says)
-- KEYS[3]  waiters' queue    (optional: direct grants, includes/grant-next.lua)
-- KEYS[4]  waiters' records  (optional, with KEYS[3])
-- ARGV[1]  owner token (a registered waiter's: the same for its whole wait)
-- ARGV[2]  ttl in ms
-- ARGV[3]  with KEYS[3]: this waiter's record "<channel>\n<ttl>\n<epoch>"
-- Returns  {1, fencingToken}         on success
--          {1, fencingToken, epoch}  the lock was granted to this waiter already (a release
--                                    handed it over while this attempt was on its way): its
--                                    validity counts from the send time of attempt `epoch`
--          {0, pttl}                 when held by someone else (pttl -1 when the key has no TTL)
-- The fencing token comes from nextFence (includes/next-fence.lua).
-- Tracking: both branches end with a read of the lock key, after the last write to it. That read
-- arms client tracking of the lock key for this connection (the holder hears of a DEL or a
-- takeover; a waiter hears of the release) under both rules servers have: Redis >= 7.2 and
-- Valkey arm exactly the keys a script reads, Redis 7.0 every declared key once anything is read.
-- The queue and records are written, not read, on the busy path: on the first rule no waiter is
-- armed on them, and on Redis 7.0 their pushes reach only waiters that listen to the lock key.
--- @include "next-fence"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = nextFence(KEYS[2])
  if KEYS[3] then
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
  end
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
if KEYS[3] then
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    local fence, epoch = string.match(redis.call('HGET', KEYS[4], ARGV[1]) or '', '^=(%d+)\n(%d+)$')
    if fence then
      redis.call('HDEL', KEYS[4], ARGV[1])
      redis.call('PTTL', KEYS[1])
      return {1, fence, tonumber(epoch)}
    end
  else
--- @include "register-waiter"
    registerWaiter(KEYS[3], KEYS[4], ARGV[1], ARGV[3], tonumber(ARGV[2]))
  end
end
return {0, redis.call('PTTL', KEYS[1])}
