-- A semaphore waiter registered for a direct grant gave up (timeout, abort, close): forget it,
-- and when a release granted it permits meanwhile, give them back and grant them on.
-- KEYS[1]  holders sorted set
-- KEYS[2]  release counter
-- KEYS[3]  fencing counter
-- KEYS[4]  waiters' queue
-- KEYS[5]  waiters' records
-- KEYS[6]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  the waiter's token
-- ARGV[2]  permits it asked for
-- Returns  1 when it held permits (given back, granted on), 0 otherwise.
--- @include "grant-permits"
FENCE_MARK = KEYS[6]
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
local removed = 0
for i = 1, tonumber(ARGV[2]) do
  removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. i)
end
if removed == 0 then
  return 0
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], IDLE_MS)
grantPermits(KEYS[1], KEYS[3], KEYS[4], KEYS[5])
return 1
