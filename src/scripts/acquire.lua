-- Acquire a mutex if it is free.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (never expires; advanced once per successful acquisition)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  {1, fencingToken}  on success (the token as a string: exact beyond 2^53)
--          {0, pttl}          when held by someone else (pttl -1 when the key has no TTL)
-- The fencing token is max(last + 1, server time in microseconds): strictly increasing, and
-- still above every earlier token after a restart that lost the counter (Redis without
-- persistence), as long as the server's clock does not go back.
-- Tracking: both branches end with a read of the lock key, after the last write to it. That read
-- arms client tracking of the lock key for this connection (the holder hears of a DEL or a
-- takeover; a waiter hears of the release) under both rules servers have: Redis >= 7.2 and
-- Valkey arm exactly the keys a script reads, Redis 7.0 every declared key once anything is read.
-- The counter is written after its read, which disarms it again: nobody needs to hear of it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  local fence = string.format('%.0f', math.max(last + 1, floor))
  redis.call('SET', KEYS[2], fence)
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
