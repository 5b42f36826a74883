-- Extend a lease if this owner still holds it. Also used as the "am I still the holder?"
-- check after an invalidation, so that an external PEXPIRE or PERSIST is repaired at once.
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended, 0 when the key is gone or holds another token.
-- A write to a tracked key (our own PEXPIRE included, NOLOOP or not) disarms it: so the read
-- that re-arms tracking of the lock key comes after it, under both tracking rules.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PTTL', KEYS[1])
  return 1
end
return 0
