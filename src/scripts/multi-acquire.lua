-- Acquire several mutexes at once, all or none (lh.multiLock when every key lives in one slot).
-- KEYS[2i-1]  lock key of the i-th name, in the caller's fixed order (sorted keys)
-- KEYS[2i]    its fencing counter (advanced once per successful acquisition; expires as
--             next-fence.lua says)
-- ARGV[1]     owner token (the same for every name)
-- ARGV[2]     ttl in ms
-- Returns  {1, fence1, fence2, ...}  on success: one fencing token per name, from that name's own
--                                    counter (the same counter lh.acquire(name) draws from)
--          {0, pttl, i}              when the i-th name is held (pttl -1 when its key has no TTL);
--                                    nothing was written
-- The keys are the ones lh.acquire(name) uses, so a multiLock and a plain mutex holder of any of
-- its names exclude each other.
-- Tracking: success ends with a read of every lock key, after the last write to them (the holder
-- hears of a DEL or takeover of any name); a busy attempt ends with a read of the blocking lock
-- key (the waiter hears of its release). Under the read-keys rule (Redis >= 7.2, Valkey) the
-- EXISTS checks of the free names before the blocking one arm those too: a spurious wake at most.
--- @include "next-fence"
local n = #KEYS / 2
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  if redis.call('EXISTS', lock) == 1 then
    return {0, redis.call('PTTL', lock), i}
  end
end
local reply = {1}
for i = 1, n do
  redis.call('SET', KEYS[2 * i - 1], ARGV[1], 'PX', ARGV[2])
  reply[i + 1] = nextFence(KEYS[2 * i])
end
for i = 1, n do
  redis.call('PTTL', KEYS[2 * i - 1])
end
return reply
