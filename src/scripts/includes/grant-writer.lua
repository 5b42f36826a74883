--- @include "grant"
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
    local granted = grantKey(writer, fenceKey, records, head)
    if granted ~= nil then
      -- Granted, or reached by nobody: either way it waits no more.
      redis.call('ZREM', waiting, head)
    end
    if granted then
      return
    end
  end
end

-- handOnWrite(writer, readers, waiting, fenceKey, records): the writer key was just freed (or a
-- reader left it free): drops writers past their deadline, then, when no unexpired reader
-- (score: expiry, server ms) is left, grants the write lease to a waiting writer.
local function handOnWrite(writer, readers, waiting, fenceKey, records)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  dropExpiredWriters(waiting, records, now)
  if redis.call('ZCOUNT', readers, '(' .. now, '+inf') == 0 then
    grantWriter(writer, waiting, fenceKey, records)
  end
end
