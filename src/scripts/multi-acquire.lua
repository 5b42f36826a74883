-- Acquire several mutexes at once, all or none (lh.multiLock when every key lives in one slot).
-- KEYS[2i-1]  lock key of the i-th name, in the caller's fixed order (sorted keys)
-- KEYS[2i]    its fencing counter (advanced once per successful acquisition; expires as
--             next-fence.lua says)
-- KEYS[2n+i]  its fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- KEYS[3n+i]  (only with ARGV[3] = '1') the i-th name's multiLock waiters: sorted set, member =
--             the waiter's stored value, score = when its record lapses (server ms); read by
--             inspection only (lh.inspect, leasehold status and top, the dashboard)
-- ARGV[1]     owner token (the same for every name)
-- ARGV[2]     ttl in ms
-- ARGV[3]     '1' when this caller will wait: a busy attempt records it among every name's
--             multiLock waiters (includes/record-waiter.lua), a successful one forgets it
-- Returns  {1, fence1, fence2, ...}  on success: one fencing token per name, from that name's own
--                                    counter (the same counter lh.acquire(name) draws from)
--          {0, pttl, i}              when the i-th name is held (pttl -1 when its key has no TTL);
--                                    nothing was written but the waiter's records
-- The keys are the ones lh.acquire(name) uses, so a multiLock and a plain mutex holder of any of
-- its names exclude each other.
-- Tracking: success ends with a read of every lock key, after the last write to them (the holder
-- hears of a DEL or takeover of any name); a busy attempt ends with a read of the blocking lock
-- key (the waiter hears of its release); the records are written after it, never last read, and
-- touch no lock key. Under the read-keys rule (Redis >= 7.2, Valkey) the EXISTS checks of the free
-- names before the blocking one arm those too: a spurious wake at most.
--- @include "next-fence"
local join = ARGV[3] == '1'
local n = join and #KEYS / 4 or #KEYS / 3
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  if redis.call('EXISTS', lock) == 1 then
    local pttl = redis.call('PTTL', lock)
    if join then
--- @include "record-waiter"
      for j = 1, n do
        recordWaiter(KEYS[3 * n + j], ARGV[1], tonumber(ARGV[2]), pttl)
      end
    end
    return {0, pttl, i}
  end
end
local reply = {1}
for i = 1, n do
  redis.call('SET', KEYS[2 * i - 1], ARGV[1], 'PX', ARGV[2])
  FENCE_MARK = KEYS[2 * n + i]
  reply[i + 1] = nextFence(KEYS[2 * i])
  if join then
    redis.call('ZREM', KEYS[3 * n + i], ARGV[1])
  end
end
for i = 1, n do
  redis.call('PTTL', KEYS[2 * i - 1])
end
return reply
