-- A waiter leaves a fair lock's queue (timeout, abort, close). When it was first in line and
-- the lock is free, the next waiter is woken.
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set
-- KEYS[3]  deadlines sorted set
-- KEYS[4]  the leaving waiter's turn key
-- ARGV[1]  waiter token
-- ARGV[2]  turn key prefix
-- Returns  the token of the waiter woken, or ''.
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[4])
if head ~= ARGV[1] or redis.call('EXISTS', KEYS[1]) == 1 then
  return ''
end
local next = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not next then
  return ''
end
redis.call('SET', ARGV[2] .. next, '1', 'PX', 60000)
return next
