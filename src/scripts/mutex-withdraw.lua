-- A mutex waiter registered for a direct grant gave up (timeout, abort, close): forget it, and
-- when a release granted it the lock meanwhile, hand the lock on as a release would.
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter
-- KEYS[3]  waiters' queue
-- KEYS[4]  waiters' records
-- KEYS[5]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  the waiter's token
-- Returns  1 when it held the lock (given on or freed), 0 otherwise.
--- @include "grant-next"
FENCE_MARK = KEYS[5]
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  grantNext(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  return 1
end
return 0
