--- @include "grant"
-- Direct grants for a read-write lock's waiting readers (docs/direct-grants.md, "Read-write
-- locks"). A reader that found the lock taken and registered for a grant has its token in
-- `queue` (sorted set, arrival order) and its record "<channel>\n<ttl>\n<epoch>" in `records`
-- (hash), which becomes "=<fence>\n<epoch>" once granted, for an attempt of its on its way.

-- grantReaders(writer, readers, waiting, fenceKey, queue, records): the caller freed the lock (a
-- write release, a waiting writer that gave up): when no writer holds it and none waits (writer
-- preference), makes each of the first 16 registered readers a reader, with its own fencing
-- token and TTL, and PUBLISHes the grant on its channel. A reader reached by nobody (dead
-- process, subscriber reconnecting) is taken out again. Readers further back, and those without
-- a record, enter by themselves when the writer key's push wakes them, as before.
local function grantReaders(writer, readers, waiting, fenceKey, queue, records)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if redis.call('EXISTS', writer) == 1 or redis.call('ZCOUNT', waiting, '(' .. now, '+inf') > 0 then
    return
  end
  for _, head in ipairs(redis.call('ZRANGE', queue, 0, 15)) do
    redis.call('ZREM', queue, head)
    local channel, ttl, epoch = registration(records, head)
    if channel then
      local fence = string.format('%.0f', nextFence(fenceKey))
      redis.call('ZADD', readers, now + tonumber(ttl), head)
      if announceGrant(records, head, channel, fence, epoch) then
        if redis.call('PTTL', readers) < tonumber(ttl) then
          redis.call('PEXPIRE', readers, ttl)
        end
      else
        redis.call('ZREM', readers, head)
        redis.call('HDEL', records, head)
      end
    end
  end
end
