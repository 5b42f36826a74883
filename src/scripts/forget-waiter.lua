-- A waiter recorded for inspection only (an election's candidate, a multiLock's waiter; see
-- includes/record-waiter.lua) gave up (timeout, abort, close): forget its record in every set.
-- (A lease an attempt of it won meanwhile is given back by the engine, as for every wait.)
-- KEYS     the sets it is recorded in (one for a candidate, one per name for a multiLock)
-- ARGV[1]  the waiter's stored value
-- Returns  0
for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return 0
