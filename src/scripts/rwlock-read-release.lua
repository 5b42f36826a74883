-- Release a read lease.
-- KEYS[1]  readers sorted set
-- KEYS[2]  reader-release counter (INCR-ed so that a waiting writer hears of it; expires IDLE_MS
--          after its last change)
-- ARGV[1]  reader token
-- Returns  1 when it was held, 0 otherwise.
--- @include "idle"
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], IDLE_MS)
  return 1
end
return 0
