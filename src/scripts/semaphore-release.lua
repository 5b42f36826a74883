-- Give back the permits of one semaphore lease, then grant free permits to waiters registered
-- for a direct grant, if any (includes/grant-permits.lua).
-- KEYS[1]  holders sorted set
-- KEYS[2]  release counter (INCR-ed so that waiters in other processes hear of it; expires
--          IDLE_MS after its last change)
-- KEYS[3]  fencing counter   (KEYS[3..6] optional: without them, no grant)
-- KEYS[4]  waiters' queue
-- KEYS[5]  waiters' records
-- KEYS[6]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  owner token
-- ARGV[2]  permits held
-- Returns  1 when every permit was still held, 0 otherwise.
-- The release counter is bumped even when a grant takes the permits: the granted waiter tracks
-- it, and its push is how that waiter learns of the grant if the message was lost.
--- @include "idle"
local removed = 0
for i = 1, tonumber(ARGV[2]) do
  removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. i)
end
if removed > 0 then
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], IDLE_MS)
end
local held = 0
if removed == tonumber(ARGV[2]) then
  held = 1
end
-- Only a name with registered waiters (or a granted lease's record) touches the others, as in
-- release.lua: a user whose ACL predates direct grants releases as before.
if removed == 0 or not KEYS[3] or redis.call('EXISTS', KEYS[5]) == 0 then
  return held
end
--- @include "grant-permits"
FENCE_MARK = KEYS[6]
-- A granted lease's record, if a release comes before the attempt that would have read it.
redis.call('HDEL', KEYS[5], ARGV[1])
grantPermits(KEYS[1], KEYS[3], KEYS[4], KEYS[5])
return held
