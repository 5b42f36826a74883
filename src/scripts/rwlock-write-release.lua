-- Release the write lease, then grant it to a registered waiting writer, if any
-- (includes/grant-writer.lua). Readers waiting behind it hear of the release by the writer key's push.
-- KEYS[1]  writer key
-- KEYS[2]  readers sorted set
-- KEYS[3]  waiting writers sorted set
-- KEYS[4]  fencing counter
-- KEYS[5]  waiting writers' records
-- ARGV[1]  writer token
-- Returns  1 when it held the lease, 0 otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
-- Records exist only while a writer is registered for a grant: a user whose ACL predates direct
-- grants (no HDEL, no PUBLISH) releases as before, since none of their waiters registers.
if redis.call('EXISTS', KEYS[5]) == 0 then
  return 1
end
--- @include "grant-writer"
-- A granted lease's record, if its release comes before the attempt that would have read it.
redis.call('HDEL', KEYS[5], ARGV[1])
handOnWrite(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 1
