--- @include "next-fence"
-- Direct grants for a read-write lock's waiting writers (docs/direct-grants.md, "Read-write
-- locks"). A waiting writer registered for a grant has, besides its place in `waiting` (sorted
-- set: token -> deadline, server ms), a record in `records` (hash): "<channel>\n<ttl>\n<epoch>",
-- which becomes "=<fence>\n<epoch>" once it is granted, for an attempt of its on its way.

-- dropExpiredWriters(waiting, records, now): waiting writers whose deadline passed (crashed,
-- paused, gave up unheard) leave, with their records.
local function dropExpiredWriters(waiting, records, now)
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', waiting, '-inf', now)) do
    redis.call('ZREM', waiting, gone)
    redis.call('HDEL', records, gone)
  end
end

-- grantWriter(writer, waiting, fenceKey, records): the caller found the writer key free and no
-- unexpired reader: grant the write lease to the first of the first 16 waiting writers (by
-- deadline) that registered and whose connection still listens, and PUBLISH it on its channel.
-- A writer reached by nobody (dead process, subscriber reconnecting) is dropped, as a mutex
-- waiter is; one without a record (it waits without a grant subscription) is passed over and
-- wakes on the pushes as before.
local function grantWriter(writer, waiting, fenceKey, records)
  for _, head in ipairs(redis.call('ZRANGE', waiting, 0, 15)) do
    local channel, ttl, epoch = string.match(redis.call('HGET', records, head) or '', '^([^\n]+)\n(%d+)\n(%d+)$')
    if channel then
      local fence = string.format('%.0f', nextFence(fenceKey))
      redis.call('SET', writer, head, 'PX', ttl)
      -- pcall: a user whose ACL allows no channels still releases (the grant is just skipped).
      local reached = redis.pcall('PUBLISH', channel, fence .. '\n' .. epoch .. '\n' .. head)
      if type(reached) == 'number' and reached > 0 then
        redis.call('HSET', records, head, '=' .. fence .. '\n' .. epoch)
        redis.call('ZREM', waiting, head)
        return
      end
      redis.call('DEL', writer)
      redis.call('ZREM', waiting, head)
      redis.call('HDEL', records, head)
    end
  end
end

-- unexpiredReaders(readers, now): how many readers still hold (score: expiry, server ms).
local function unexpiredReaders(readers, now)
  return redis.call('ZCOUNT', readers, '(' .. now, '+inf')
end
