-- Release a fair lock but keep it taken for ARGV[3] ms more (AcquireOptions.minHold): the lock key
-- lives that long, then lapses. The first in line is woken by its turn key (the only key it
-- listens to), so that its attempt learns when the hold ends and takes its turn then.
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set (token -> arrival number)
-- KEYS[3]  deadlines sorted set (token -> deadline, server ms)
-- ARGV[1]  holder token
-- ARGV[2]  turn key prefix (the next waiter's token is appended; same hash tag)
-- ARGV[3]  how long the lock stays taken, ms
-- Returns  {1, token of the waiter woken, or ''} when this holder held it (the caller wakes its own
--          waiter: a connection hears no push for its own writes), {0, ''} otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0, ''}
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not head then
  return {1, ''}
end
redis.call('SET', ARGV[2] .. head, '1', 'PX', math.max(1000, tonumber(redis.call('PTTL', KEYS[3]))))
return {1, head}
