-- Extend a lease if this owner still holds it. Also used as the "am I still the holder?"
-- check after an invalidation, so that an external PEXPIRE or PERSIST is repaired at once.
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended; 0 when the key is missing (deleted, expired, or the node restarted
--          empty); -1 when another token holds it. One Redis treats 0 and -1 alike (lost); a
--          quorum puts a missing key back once a majority confirmed the lease
--          (quorum-restore.lua), so rolling restarts never whittle a held lease down to nothing.
-- A write to a tracked key (our own PEXPIRE included, NOLOOP or not) disarms it: so the read
-- that re-arms tracking of the lock key comes after it, under both tracking rules.
local value = redis.call('GET', KEYS[1])
if value == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PTTL', KEYS[1])
  return 1
end
if value then
  return -1
end
return 0
