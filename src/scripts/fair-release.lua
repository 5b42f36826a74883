-- Release a fair lock and serve only the waiter first in line (includes/hand-on-turn.lua): a
-- direct grant when it registered for one, else its turn key.
-- KEYS[1]  lock key
-- KEYS[2]  queue sorted set (token -> arrival number)
-- KEYS[3]  deadlines sorted set (token -> deadline, server ms)
-- KEYS[4]  fencing counter    (KEYS[4..6] optional: without them, no grant)
-- KEYS[5]  waiters' records   (hash: token -> direct-grant record)
-- KEYS[6]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  holder token
-- ARGV[2]  turn key prefix (the next waiter's token is appended; same hash tag)
-- Returns  {1, nextToken or ''} when this holder held it (the caller wakes its own waiter:
--          a connection hears no push for its own writes), {0, ''} otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0, ''}
end
redis.call('DEL', KEYS[1])
-- Records exist only while someone registered for a grant: a user whose ACL predates direct
-- grants (no HDEL, no PUBLISH) releases as before, since none of their waiters registers.
local records = KEYS[5]
if records and redis.call('EXISTS', records) == 0 then
  records = nil
end
if records then
  -- A granted lease's record, if its release comes before the attempt that would have read it.
  redis.call('HDEL', records, ARGV[1])
end
--- @include "hand-on-turn"
FENCE_MARK = KEYS[6]
return {1, handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[4], records, ARGV[2])}
