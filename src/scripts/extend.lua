-- Extend a lease if this owner still holds it. Also used as the "am I still the holder?"
-- check after an invalidation, so that an external PEXPIRE or PERSIST is repaired at once.
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended, 0 when the key is gone or holds another token.
-- Redis 7.0 arms tracking when a read inside the script runs, and any write to the key
-- (our own PEXPIRE included) clears it again: so the read that re-arms must come last.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PTTL', KEYS[1])
  return 1
end
return 0
