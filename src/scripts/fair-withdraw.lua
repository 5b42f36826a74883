-- A waiter leaves a fair lock's queue (timeout, abort, close). When it was first in line and
-- the lock is free, or a direct grant made it the holder meanwhile (the lock is freed), the
-- next in line is served as a release would (includes/hand-on-turn.lua).
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set
-- KEYS[3]  deadlines sorted set
-- KEYS[4]  the leaving waiter's turn key
-- KEYS[5]  fencing counter    (KEYS[5..6] optional: a waiter registered for direct grants)
-- KEYS[6]  waiters' records
-- ARGV[1]  waiter token
-- ARGV[2]  turn key prefix
-- Returns  the token of the waiter woken by its turn key, or ''.
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[4])
local records = KEYS[6]
if records then
  redis.call('HDEL', records, ARGV[1])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
elseif head ~= ARGV[1] or redis.call('EXISTS', KEYS[1]) == 1 then
  return ''
end
--- @include "hand-on-turn"
return handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[5], records, ARGV[2])
