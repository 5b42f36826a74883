-- A waiter leaves a fair lock's queue (timeout, abort, close). When it was first in line and
-- the lock is free, or a direct grant made it the holder meanwhile (the lock is freed), the
-- next in line is served as a release would (includes/hand-on-turn.lua). When it was first in
-- line and the lock is held, the next in line is woken all the same: the lock may be a grant's
-- claim window that no release will end (its grantee paused or gone), and the waiter first in
-- line must learn when it ends (docs/direct-grants.md, "The claim window").
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set
-- KEYS[3]  deadlines sorted set
-- KEYS[4]  the leaving waiter's turn key
-- KEYS[5]  fencing counter    (KEYS[5..7] optional: a waiter registered for direct grants)
-- KEYS[6]  waiters' records
-- KEYS[7]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
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
elseif head ~= ARGV[1] then
  return ''
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  local next = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not next then
    return ''
  end
  redis.call('SET', ARGV[2] .. next, '1', 'PX', math.max(1000, tonumber(redis.call('PTTL', KEYS[3]))))
  return next
end
--- @include "hand-on-turn"
FENCE_MARK = KEYS[7]
return handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[5], records, ARGV[2])
