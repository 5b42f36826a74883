-- Quorum mode: put a lease back on a node where its key is missing, after a majority of the
-- other nodes confirmed it in the same extension round (a node that restarted empty).
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter (raised with an expiry derived from the token: raise-fence.lua)
-- KEYS[3]  fence mark (the counter's high-water mark, raised with it: includes/fence-mark.lua)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- ARGV[3]  the lease's fencing token (decimal)
-- Returns  1 when the node holds the lease now: restored, or found already ours (another
--          extension of this lease, sent alongside, put it back first); 0 when another owner's
--          key is there (no harm, the lease still holds its majority elsewhere). Answering 0 for
--          our own key counted the node as lost and the lease as under-replicated.
-- The counter is raised to the lease's token, as fence-raise.lua does at acquisition (with the
-- same expiry, raise-fence.lua), so the node never hands out a smaller token later. The closing
-- read arms tracking of the lock key.
--- @include "raise-fence"
FENCE_MARK = KEYS[3]
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
  return 0
end
raiseFence(KEYS[2], ARGV[3])
redis.call('PTTL', KEYS[1])
return 1
