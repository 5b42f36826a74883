-- Acquire a mutex where no direct grant registers its waiters (a quorum's nodes, the memory
-- backend, a client without subscriptions): a waiter that will wait is recorded for inspection
-- only (includes/record-waiter.lua), as a multiLock's waiters and an election's candidates are.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (advanced once per successful acquisition; expires as next-fence.lua says)
-- KEYS[3]  fence mark        (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[4]  waiters recorded for inspection: sorted set, member = the waiter's stored value (one
--          for its whole wait), score = when its record lapses (server ms)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  {1, fencingToken} on success (its record, if any, forgotten);
--          {0, pttl} when held by someone else (pttl -1 when the key has no TTL), the waiter recorded
-- Tracking: as acquire.lua, both branches end with a read of the lock key after the last write to
-- it; the record is written after it, never last read, and is no lock key.
--- @include "next-fence"
FENCE_MARK = KEYS[3]
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = nextFence(KEYS[2])
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
local pttl = redis.call('PTTL', KEYS[1])
--- @include "record-waiter"
recordWaiter(KEYS[4], ARGV[1], tonumber(ARGV[2]), pttl)
return {0, pttl}
