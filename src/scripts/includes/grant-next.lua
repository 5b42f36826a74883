--- @include "grant"
-- grantNext(lock, fenceKey, queue, records): direct grants (docs/safety.md, "Direct grants").
-- Called right after the lock key was deleted by its holder: hands the lock to the first waiter
-- in `queue` (sorted set of waiters' stored values, in arrival order) whose connection still
-- listens on its channel, and tells it with a PUBLISH on that channel. The waiter then holds
-- the lock without asking again. `records` (hash) maps a waiter's stored value to
-- "<channel>\n<ttl ms>\n<epoch>" (epoch: which of its attempts registered it last, so that its
-- lease's validity counts from that attempt's send time); a granted waiter's record becomes
-- "=<fence>\n<epoch>", for an attempt of its that was on its way to find it holding the lock.
-- PUBLISH counts the connections it reached: a waiter whose process died or whose subscriber
-- dropped counts 0 and is skipped, rather than granted a lock nobody would release; one reached
-- but lost on the way still hears of the grant through the lock key's invalidation (it tracks
-- the lock key) and finds the lock its own on its next attempt.
local function grantNext(lock, fenceKey, queue, records)
  while true do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return
    end
    redis.call('ZREM', queue, head)
    if grantKey(lock, fenceKey, records, head) then
      return
    end
    redis.call('HDEL', records, head)
  end
end
