#!lua flags=no-writes
-- Read a semaphore for inspection (see inspect-mutex.lua).
-- KEYS[1]  holders set (member <value>:<i> per permit, score = expiry)   KEYS[2]  fencing counter
-- KEYS[3]  waiters' queue (optional: waiters registered for a direct grant, arrival order)
-- ARGV[1]  most members returned
-- Returns  {now, fence, permits in use, {member, expiry, ...}, queued, {waiter, ...}, queue pttl}
--- @include "inspect-now"
--- @include "inspect-queue"
local queued, waiters, lapse = registered(KEYS[3])
return {now, redis.call('GET', KEYS[2]), redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), live(KEYS[1]),
  queued, waiters, lapse}
