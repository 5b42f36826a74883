-- Release a fair lock and wake only the waiter first in line.
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set (token -> arrival number)
-- KEYS[3]  deadlines sorted set (token -> deadline, server ms)
-- ARGV[1]  holder token
-- ARGV[2]  turn key prefix (the next waiter's token is appended; same hash tag)
-- Returns  {1, nextToken or ''} when this holder held it (the caller wakes its own waiter:
--          a connection hears no push for its own writes), {0, ''} otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0, ''}
end
redis.call('DEL', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], dead)
  redis.call('ZREM', KEYS[3], dead)
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not head then
  return {1, ''}
end
redis.call('SET', ARGV[2] .. head, '1', 'PX', math.max(1000, tonumber(redis.call('PTTL', KEYS[3]))))
return {1, head}
