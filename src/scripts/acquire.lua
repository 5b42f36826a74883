-- Acquire a mutex if it is free.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (advanced once per successful acquisition; expires as next-fence.lua says)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  {1, fencingToken}  on success
--          {0, pttl}          when held by someone else (pttl -1 when the key has no TTL)
-- The fencing token comes from nextFence (includes/next-fence.lua).
-- Tracking: both branches end with a read of the lock key, after the last write to it. That read
-- arms client tracking of the lock key for this connection (the holder hears of a DEL or a
-- takeover; a waiter hears of the release) under both rules servers have: Redis >= 7.2 and
-- Valkey arm exactly the keys a script reads, Redis 7.0 every declared key once anything is read.
--- @include "next-fence"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = nextFence(KEYS[2])
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
