-- Take a mutex over whoever holds it.
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter (expires as next-fence.lua says)
-- KEYS[3]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  fencingToken, from nextFence as in acquire.lua. The overwrite notifies the
-- previous holder's connection; the closing read arms the lock key for the new holder.
--- @include "next-fence"
FENCE_MARK = KEYS[3]
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local fence = nextFence(KEYS[2])
redis.call('PTTL', KEYS[1])
return fence
