-- registered(queue): the waiters registered for a direct grant in `queue` (a sorted set in
-- arrival order; nil when the caller declared none): how many, the first `max` (from
-- inspect-now.lua, included before this), and the queue's PTTL (when it lapses; -2 without it).
-- For the inspect scripts of the mutex, the semaphore and the read-write lock's readers.
local function registered(queue)
  if not queue then
    return 0, {}, -2
  end
  return redis.call('ZCARD', queue), redis.call('ZRANGE', queue, 0, max - 1), redis.call('PTTL', queue)
end
