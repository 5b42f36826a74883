#!lua flags=no-writes
-- Read a mutex for inspection (lh.inspect, lh.list, leasehold status and top, the dashboard).
-- Read-only (no-writes: a read-only ACL user may run it), so inspecting never changes what
-- holders and waiters see. Every inspect-<primitive>.lua follows this shape.
-- KEYS[1]  lock key     KEYS[2]  fencing counter
-- KEYS[3]  waiters' queue (optional: waiters registered for a direct grant, arrival order)
-- KEYS[4]  multiLock waiters (optional; see multi-acquire.lua)
-- ARGV[1]  most members returned per sorted set
-- Returns  {now (server ms), value, pttl, fence, queued, {waiter, ...}, queue pttl,
--           multiLocks waiting, {multiLock waiter, lapse, ...}}; a missing string is nil (false
--           in Lua); only the multiLock waiters whose records have not lapsed
--- @include "inspect-now"
--- @include "inspect-queue"
local queued, waiters, lapse = registered(KEYS[3])
local multis, multi = 0, {}
if KEYS[4] then
  multis, multi = redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf'), live(KEYS[4])
end
return {now, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]),
  queued, waiters, lapse, multis, multi}
