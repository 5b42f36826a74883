-- Acquire a mutex if it is free; a waiter that will wait registers for a direct grant.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (advanced once per successful acquisition; expires as next-fence.lua says)
-- KEYS[3]  fence mark        (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[4]  waiters' queue    (optional: direct grants, includes/grant-next.lua)
-- KEYS[5]  waiters' records  (optional, with KEYS[4])
-- KEYS[6]  waiters recorded for inspection only (optional, with KEYS[4]; acquire-recorded.lua):
--          a find-only attempt (ARGV[3] '') records its waiter there, so that inspection lists
--          a waiter whose grant subscription is down (or refused by an ACL)
-- ARGV[1]  owner token (a registered waiter's: the same for its whole wait)
-- ARGV[2]  ttl in ms
-- ARGV[3]  with KEYS[4]: this waiter's record "<channel>\n<window>\n<epoch>" (window: how long a
--          grant holds the lock for it before it claims it), or '' to register nothing (its
--          grant subscription is down) and only look for a grant already made to it
-- Returns  {1, fencingToken}         on success
--          {1, fencingToken, epoch}  the lock was granted to this waiter already (a release
--                                    handed it over for its claim window, which this attempt
--                                    claims: the lock gets the full ttl again)
--          {0, pttl}                 when held by someone else (pttl -1 when the key has no TTL)
-- The fencing token comes from nextFence (includes/next-fence.lua).
-- Tracking: both branches end with a read of the lock key, after the last write to it. That read
-- arms client tracking of the lock key for this connection (the holder hears of a DEL or a
-- takeover; a waiter hears of the release) under both rules servers have: Redis >= 7.2 and
-- Valkey arm exactly the keys a script reads, Redis 7.0 every declared key once anything is read.
-- The queue and records are written, not read, on the busy path: on the first rule no waiter is
-- armed on them, and on Redis 7.0 their pushes reach only waiters that listen to the lock key.
--- @include "next-fence"
FENCE_MARK = KEYS[3]
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = nextFence(KEYS[2])
  if KEYS[4] then
    redis.call('ZREM', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[5], ARGV[1])
  end
  if KEYS[6] then
    redis.call('ZREM', KEYS[6], ARGV[1])
  end
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
if KEYS[4] then
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    local fence, epoch = string.match(redis.call('HGET', KEYS[5], ARGV[1]) or '', '^=(%d+)\n(%d+)$')
    if fence then
      redis.call('HDEL', KEYS[5], ARGV[1])
      redis.call('PEXPIRE', KEYS[1], ARGV[2])
      redis.call('PTTL', KEYS[1])
      return {1, fence, tonumber(epoch)}
    end
  elseif ARGV[3] ~= '' then
--- @include "register-waiter"
    registerWaiter(KEYS[4], KEYS[5], ARGV[1], ARGV[3], tonumber(ARGV[2]))
  elseif KEYS[6] then
    local pttl = redis.call('PTTL', KEYS[1])
--- @include "record-waiter"
    recordWaiter(KEYS[6], ARGV[1], tonumber(ARGV[2]), pttl)
    return {0, pttl}
  end
end
return {0, redis.call('PTTL', KEYS[1])}
