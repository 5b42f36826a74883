--- @include "grant"
-- handOn(lock, queue, deadlines, fenceKey, records, turnPrefix): the fair lock was just freed by
-- its holder (a release, or a waiter giving back a grant it can no longer use). Drops waiters
-- whose deadline passed, then serves the first in line, who keeps the place FIFO gave it:
-- - registered for a direct grant (`records` given and holding its record
--   "<channel>\n<ttl>\n<epoch>", docs/direct-grants.md): it is granted the lock, with the next
--   fencing token, and told by a PUBLISH on its channel; its record becomes "=<fence>\n<epoch>"
--   for an attempt of its that is on its way. A PUBLISH that reaches nobody (its subscriber is
--   reconnecting, or its process died) undoes the grant, and the waiter is woken by its turn key
--   as below: a live waiter keeps its place, a dead one is dropped at its deadline.
-- - otherwise its turn key is written, which only it tracks: it wakes and takes the lock itself.
-- Returns the token whose turn key was written (the caller wakes it when it is in this process:
-- no push comes for a connection's own writes): the head's, or when the head was granted the
-- lock, the next one's; '' when nobody is left to wake.
local function handOn(lock, queue, deadlines, fenceKey, records, turnPrefix)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for _, dead in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', now)) do
    redis.call('ZREM', queue, dead)
    redis.call('ZREM', deadlines, dead)
    if records then
      redis.call('HDEL', records, dead)
    end
  end
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if not head then
    return ''
  end
  if records and grantKey(lock, fenceKey, records, head) then
    redis.call('ZREM', queue, head)
    redis.call('ZREM', deadlines, head)
    redis.call('DEL', turnPrefix .. head)
    -- The grant holds the lock for its claim window only: wake the next in line, whose attempt
    -- learns when that window ends and takes its turn then if the grantee never claimed it (a
    -- paused or dead waiter must not hold the line for longer: docs/direct-grants.md).
    local next = redis.call('ZRANGE', queue, 0, 0)[1]
    if not next then
      return ''
    end
    redis.call('SET', turnPrefix .. next, '1', 'PX', math.max(1000, tonumber(redis.call('PTTL', deadlines))))
    return next
  end
  redis.call('SET', turnPrefix .. head, '1', 'PX', math.max(1000, tonumber(redis.call('PTTL', deadlines))))
  return head
end
