--- @include "next-fence"
-- The one grant protocol every primitive's direct grants share (docs/direct-grants.md). A waiter
-- registered for a grant has a record in `records` (hash, keyed by its stored value) whose first
-- three fields are "<channel>\n<ttl ms>\n<epoch>"; a granted waiter's record becomes
-- "=<fence>\n<epoch>", for an attempt of its that is on its way to find the grant.

-- announceGrant(records, head, channel, fence, epoch): tells waiter `head` of its grant with a
-- PUBLISH of "<fence>\n<epoch>\n<head>" on its channel. PUBLISH counts the connections it
-- reached: 0 (the waiter's process died, its subscriber is reconnecting) returns false, and the
-- caller undoes the grant. pcall: a user whose ACL allows no channels still releases (the grant
-- is just undone).
local function announceGrant(records, head, channel, fence, epoch)
  local reached = redis.pcall('PUBLISH', channel, fence .. '\n' .. epoch .. '\n' .. head)
  if type(reached) == 'number' and reached > 0 then
    redis.call('HSET', records, head, '=' .. fence .. '\n' .. epoch)
    return true
  end
  return false
end

-- registration(records, head): the channel, ttl and epoch of waiter `head`'s record, or nil when
-- it has none (or one already granted).
local function registration(records, head)
  return string.match(redis.call('HGET', records, head) or '', '^([^\n]+)\n(%d+)\n(%d+)$')
end

-- grantKey(key, fenceKey, records, head): grants the lock at `key` (free: the caller checked) to
-- waiter `head` with the next fencing token and the TTL its record names, and announces it.
-- Returns true when granted; false when nobody heard (the key is freed again and the record
-- deleted); nil when `head` has no registration (no record, or one already granted).
local function grantKey(key, fenceKey, records, head)
  local channel, ttl, epoch = registration(records, head)
  if not channel then
    return nil
  end
  local fence = string.format('%.0f', nextFence(fenceKey))
  redis.call('SET', key, head, 'PX', ttl)
  if announceGrant(records, head, channel, fence, epoch) then
    return true
  end
  redis.call('DEL', key)
  redis.call('HDEL', records, head)
  return false
end
