#!lua flags=no-writes
-- Read a mutex for inspection (lh.inspect, lh.list, leasehold status and top, the dashboard).
-- Read-only (no-writes: a read-only ACL user may run it), so inspecting never changes what
-- holders and waiters see. Every inspect-<primitive>.lua follows this shape.
-- KEYS[1]  lock key     KEYS[2]  fencing counter
-- KEYS[3]  waiters' queue (optional: waiters registered for a direct grant, arrival order)
-- KEYS[4]  multiLock waiters (optional; see multi-acquire.lua)
-- KEYS[5]  waiters recorded where no grant registers them (optional; see acquire-recorded.lua)
-- ARGV[1]  most members returned per sorted set
-- Returns  {now (server ms), value, pttl, fence, queued, {waiter, ...}, queue pttl,
--           multiLocks waiting, {multiLock waiter, lapse, ...}, recorded waiting,
--           {recorded waiter, lapse, ...}}; a missing string is nil (false in Lua); of the
--           recorded sets, only the members whose records have not lapsed
--- @include "inspect-now"
--- @include "inspect-queue"
local function recorded(key)
  if not key then
    return 0, {}
  end
  return redis.call('ZCOUNT', key, '(' .. now, '+inf'), live(key)
end
local queued, waiters, lapse = registered(KEYS[3])
local multis, multi = recorded(KEYS[4])
local records, record = recorded(KEYS[5])
return {now, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]),
  queued, waiters, lapse, multis, multi, records, record}
