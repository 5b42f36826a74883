-- registerWaiter(queue, records, stored, record, ttl): direct grants (docs/direct-grants.md).
-- Puts a waiter that found the lock or the permits taken in `queue` (sorted set, arrival order:
-- ZADD NX, so a waiter keeps the place of its first registration) with its `record` in `records`
-- (hash), and keeps both alive twice its `ttl` (ms): a waiter attempts again at least once per
-- holder TTL, so its registration never lapses while it waits. Each key is last written by the
-- PEXPIRE after its PTTL (a first registration always sets it), so no tracking rule leaves the
-- waiter armed on them (test/integration/script-tracking.test.ts).
-- Included inside the branch that registers, so that other calls do not define it.
local function registerWaiter(queue, records, stored, record, ttl)
  local t = redis.call('TIME')
  redis.call('ZADD', queue, 'NX', t[1] .. string.format('%06d', tonumber(t[2])), stored)
  redis.call('HSET', records, stored, record)
  local horizon = ttl * 2
  for _, key in ipairs({queue, records}) do
    if redis.call('PTTL', key) < horizon then
      redis.call('PEXPIRE', key, horizon)
    end
  end
end
