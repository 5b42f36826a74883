-- Release the write lease, then grant it to a registered waiting writer, if any
-- (includes/grant-writer.lua), or else, when no writer waits, read leases to the registered
-- waiting readers (includes/grant-readers.lua). Readers that did not register hear of the
-- release by the writer key's push.
-- KEYS[1]  writer key
-- KEYS[2]  readers sorted set
-- KEYS[3]  waiting writers sorted set
-- KEYS[4]  fencing counter
-- KEYS[5]  waiting writers' records
-- KEYS[6]  waiting readers' queue
-- KEYS[7]  waiting readers' records
-- KEYS[8]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  writer token
-- Returns  1 when it held the lease, 0 otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
-- Records exist only while a waiter is registered for a grant: a user whose ACL predates direct
-- grants (no HDEL, no PUBLISH) releases as before, since none of their waiters registers.
if redis.call('EXISTS', KEYS[5], KEYS[7]) == 0 then
  return 1
end
--- @include "grant-writer"
--- @include "grant-readers"
FENCE_MARK = KEYS[8]
-- A granted lease's record, if its release comes before the attempt that would have read it.
redis.call('HDEL', KEYS[5], ARGV[1])
handOnWrite(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
grantReaders(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7])
return 1
