-- Join (or stay in) a fair lock's FIFO queue, and take the lock when first in line and free.
-- KEYS[1]  lock key: the holder's token, with a TTL
-- KEYS[2]  queue: sorted set, member = waiter token, score = arrival number
-- KEYS[3]  deadlines: sorted set, member = waiter token, score = deadline (server ms)
-- KEYS[4]  arrival counter: a counter like the fencing counter (nextFence), so that arrival
--          numbers keep increasing after it expires and a newcomer never jumps the line
-- KEYS[5]  fencing counter (expires as next-fence.lua says)
-- KEYS[6]  this waiter's turn key: written when it becomes first in line and the lock is free
-- ARGV[1]  waiter token (stable for the whole wait)
-- ARGV[2]  lease ttl in ms
-- ARGV[3]  waiter ttl in ms: the deadline is pushed this far ahead on every attempt
-- ARGV[4]  turn key prefix (the token is appended; same hash tag, so the same slot)
-- KEYS[7]  fence mark (the counter's high-water mark: includes/fence-mark.lua)
--          (one slot: the arrival counter's too)
-- KEYS[8]  waiters' records (optional: direct grants, includes/hand-on-turn.lua)
-- ARGV[5]  '1' to join the queue when the lock cannot be had now, '0' for a single attempt
-- ARGV[6]  with KEYS[8]: this waiter's record "<channel>\n<window>\n<epoch>", or '' (its grant
--          subscription is down: no record, only a grant already made to it is looked for)
-- Returns  {1, fencingToken} on success
--          {1, fencingToken, epoch}  a release granted it the lock for its claim window, which
--                            this attempt claims (the lock gets the full ttl again)
--          {0, ms}           otherwise: ms until the holder's TTL runs out (when first in line)
--                            or until the first waiter's deadline passes (a fallback timer)
-- Waiters whose deadline passed (crashed, paused, abandoned) are dropped first, so a dead waiter
-- delays the ones behind it by its deadline at most.
-- Tracking: a waiter ends with a read of its turn key (the only key its wait listens to), a new
-- holder with a read of the lock key.
--- @include "next-fence"
FENCE_MARK = KEYS[7]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, ttl, wttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local records = KEYS[8]
if records and redis.call('GET', KEYS[1]) == token then
  local fence, epoch = string.match(redis.call('HGET', records, token) or '', '^=(%d+)\n(%d+)$')
  if fence then
    redis.call('HDEL', records, token)
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PTTL', KEYS[1])
    return {1, fence, tonumber(epoch)}
  end
  -- Its own lock without a record: the grant's message delivered that lease already (and this
  -- attempt must not queue the holder again).
  redis.call('GET', KEYS[6])
  return {0, redis.call('PTTL', KEYS[1])}
end
local before = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], dead)
  redis.call('ZREM', KEYS[3], dead)
  if records then
    redis.call('HDEL', records, dead)
  end
end
local queued = redis.call('ZSCORE', KEYS[2], token)
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local free = redis.call('EXISTS', KEYS[1]) == 0
if free and (head == token or (not head and not queued)) then
  redis.call('SET', KEYS[1], token, 'PX', ttl)
  redis.call('ZREM', KEYS[2], token)
  redis.call('ZREM', KEYS[3], token)
  redis.call('DEL', KEYS[6])
  if records then
    redis.call('HDEL', records, token)
  end
  local fence = nextFence(KEYS[5])
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
if queued or ARGV[5] == '1' then
  if not queued then
    redis.call('ZADD', KEYS[2], string.format('%.0f', nextFence(KEYS[4])), token)
    head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  end
  redis.call('ZADD', KEYS[3], now + wttl, token)
  if records and ARGV[6] ~= '' then
    redis.call('HSET', records, token, ARGV[6])
  end
  -- The queue outlives its last waiter only briefly; never shorten another waiter's horizon.
  for _, key in ipairs({KEYS[2], KEYS[3], records}) do
    if redis.call('PTTL', key) < wttl * 2 then
      redis.call('PEXPIRE', key, wttl * 2)
    end
  end
end
-- Dropping a dead head made someone else first in line: wake only them (the lock is free, or
-- it may be a grant's claim window that no release will end: they learn when it ends).
if head and head ~= before and head ~= token then
  redis.call('SET', ARGV[4] .. head, '1', 'PX', wttl)
end
redis.call('GET', KEYS[6])
if head == token then
  return {0, redis.call('PTTL', KEYS[1])}
end
if not head then
  return {0, -1}
end
return {0, math.max(0, tonumber(redis.call('ZSCORE', KEYS[3], head)) - now)}
