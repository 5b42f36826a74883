#!lua flags=no-writes
-- Read a fair lock for inspection (see inspect-mutex.lua).
-- KEYS[1]  lock key   KEYS[2]  fencing counter   KEYS[3]  queue (arrival order)   KEYS[4]  deadlines
-- ARGV[1]  most waiters returned
-- Returns  {now, fence, holder, holder pttl, queued, {waiter, deadline, ...}}: the waiters in line
--          order, those whose deadline passed left out (the next attempt drops them)
--- @include "inspect-now"
local waiters = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, max - 1)) do
  local deadline = redis.call('ZSCORE', KEYS[4], member)
  if deadline and tonumber(deadline) > now then
    waiters[#waiters + 1] = member
    waiters[#waiters + 1] = deadline
  end
end
return {now, redis.call('GET', KEYS[2]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
  redis.call('ZCARD', KEYS[3]), waiters}
