-- Quorum mode: raise a node's fencing counter to the token handed out, and confirm the lock.
-- Two majorities share at least one node; once every node of this holder's majority counts at
-- least its token, the next holder's INCR on the shared node yields a larger one.
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter (raised with an expiry derived from the token: raise-fence.lua)
-- KEYS[3]  fence mark (the counter's high-water mark, raised with it: includes/fence-mark.lua)
-- ARGV[1]  owner token
-- ARGV[2]  fencing token handed out (decimal)
-- Returns  1 when the lock still holds this owner's token, else 0.
-- The read of the lock key comes last so that tracking stays armed after the counter write.
--- @include "raise-fence"
FENCE_MARK = KEYS[3]
raiseFence(KEYS[2], ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
