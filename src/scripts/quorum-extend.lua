-- Quorum mode: extend a lease on one node, telling "gone" from "taken".
-- KEYS[1]  lock key
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended; 0 when the key is missing (the node restarted empty, or the key was
--          deleted or expired there); -1 when another token holds it.
-- A missing key is restored by quorum-restore.lua once a majority confirmed the lease, so that
-- rolling restarts of the masters never whittle a held lease down to nothing. The closing
-- read re-arms tracking of the lock key after the PEXPIRE (see extend.lua).
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
