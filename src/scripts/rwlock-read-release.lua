-- Release a read lease, or withdraw a reader registered for a direct grant that gave up (with a
-- lease granted to it meanwhile, if any). The last reader out grants the write lease to a
-- registered waiting writer, if any (includes/grant-writer.lua).
-- KEYS[1]  readers sorted set
-- KEYS[2]  reader-release counter (INCR-ed so that a waiting writer hears of it; expires IDLE_MS
--          after its last change)
-- KEYS[3]  writer key              (KEYS[3..9] optional: without them, no grant)
-- KEYS[4]  waiting writers sorted set
-- KEYS[5]  fencing counter
-- KEYS[6]  waiting writers' records
-- KEYS[7]  waiting readers' queue
-- KEYS[8]  waiting readers' records
-- KEYS[9]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  reader token
-- Returns  1 when it was held, 0 otherwise.
--- @include "idle"
-- Its registration, or a granted lease's record if its release comes before the attempt that
-- would have read it. (Only where records exist: see rwlock-write-release.lua.)
if KEYS[8] and redis.call('EXISTS', KEYS[8]) == 1 then
  redis.call('ZREM', KEYS[7], ARGV[1])
  redis.call('HDEL', KEYS[8], ARGV[1])
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], IDLE_MS)
-- Only a name with a registered writer touches the others (see rwlock-write-release.lua).
if not KEYS[6] or redis.call('EXISTS', KEYS[6]) == 0 or redis.call('EXISTS', KEYS[3]) == 1 then
  return 1
end
--- @include "grant-writer"
FENCE_MARK = KEYS[9]
handOnWrite(KEYS[3], KEYS[1], KEYS[4], KEYS[5], KEYS[6])
return 1
