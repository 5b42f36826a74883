#!lua flags=no-writes
-- Read a mutex for inspection (lh.inspect, lh.list, leasehold status and top, the dashboard).
-- Read-only (no-writes: a read-only ACL user may run it), so inspecting never changes what
-- holders and waiters see. Every inspect-<primitive>.lua follows this shape.
-- KEYS[1]  lock key     KEYS[2]  fencing counter
-- KEYS[3]  waiters' queue (optional: waiters registered for a direct grant, arrival order)
-- ARGV[1]  most members returned per sorted set
-- Returns  {now (server ms), value, pttl, fence, queued, {waiter, ...}, queue pttl}; a missing
--          string is nil (false in Lua)
--- @include "inspect-now"
--- @include "inspect-queue"
local queued, waiters, lapse = registered(KEYS[3])
return {now, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]),
  queued, waiters, lapse}
