--- @include "grant"
-- grantPermits(set, fenceKey, queue, records): direct grants of a semaphore's permits
-- (docs/direct-grants.md). Called after permits were given back: hands free permits to the
-- waiters registered in `queue` (sorted set of stored values, in arrival order), each one that
-- fits with all the permits it asked for under its own limit, and tells each with a PUBLISH on
-- its channel. `records` (hash) maps a stored value to
-- "<channel>\n<ttl ms>\n<epoch>\n<permits>\n<limit>"; a granted one becomes "=<fence>\n<epoch>",
-- for an attempt of its that was on its way to find the permits its own (semaphore-acquire.lua).
-- PUBLISH counts the connections it reached: 0 (the waiter's process died, its subscriber is
-- reconnecting) takes the permits back and goes on to the next waiter. One call looks at the
-- first GRANT_SCAN waiters only, so that a queue of waiters that want more than is free cannot
-- make a release slow; those further back attempt when the release counter's push wakes them.
local GRANT_SCAN = 16
local function grantPermits(set, fenceKey, queue, records)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
  local used = redis.call('ZCARD', set)
  for _, head in ipairs(redis.call('ZRANGE', queue, 0, GRANT_SCAN - 1)) do
    local record = redis.call('HGET', records, head)
    local channel, ttl, epoch, n, limit
    if record then
      channel, ttl, epoch, n, limit = string.match(record, '^([^\n]+)\n(%d+)\n(%d+)\n(%d+)\n(%d+)$')
    end
    if not channel then
      redis.call('ZREM', queue, head)
      redis.call('HDEL', records, head)
    else
      n, limit = tonumber(n), tonumber(limit)
      if used + n <= limit then
        redis.call('ZREM', queue, head)
        local fence = string.format('%.0f', nextFence(fenceKey))
        for i = 1, n do
          redis.call('ZADD', set, now + tonumber(ttl), head .. ':' .. i)
        end
        if announceGrant(records, head, channel, fence, epoch) then
          if redis.call('PTTL', set) < tonumber(ttl) then
            redis.call('PEXPIRE', set, ttl)
          end
          used = used + n
        else
          for i = 1, n do
            redis.call('ZREM', set, head .. ':' .. i)
          end
          redis.call('HDEL', records, head)
        end
      end
      -- Full for this waiter's limit: the waiters behind it (who share it) cannot fit either.
      if used >= limit then
        return
      end
    end
  end
end
