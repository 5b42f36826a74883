-- Acquire a mutex if it is free.
-- KEYS[1]  lock key          (holds the owner token, with a TTL)
-- KEYS[2]  fencing counter   (never expires; advanced once per successful acquisition)
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  {1, fencingToken}  on success
--          {0, pttl}          when held by someone else (pttl -1 when the key has no TTL)
-- The fencing token is the counter's INCR, seeded with the server time in microseconds when the
-- counter is missing (first use, or a restart without persistence lost it): strictly
-- increasing, and still above every earlier token after such a restart as long as the server's
-- clock does not go back and the lock was not acquired more than once per microsecond on average
-- since the last seed (a Redis serves a few hundred thousand scripts a second in all). Seeding
-- only then, instead of max(last + 1, TIME) on every acquisition, cut the script's server time
-- from 6.0 to 3.5 us (docs/benchmarks.md); the earlier tokens, floored by time, stay below.
-- Tracking: both branches end with a read of the lock key, after the last write to it. That read
-- arms client tracking of the lock key for this connection (the holder hears of a DEL or a
-- takeover; a waiter hears of the release) under both rules servers have: Redis >= 7.2 and
-- Valkey arm exactly the keys a script reads, Redis 7.0 every declared key once anything is read.
-- The counter is only written (INCR, and SET when seeded): no rule arms it for a read, nobody
-- needs to hear of it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence = redis.call('INCR', KEYS[2])
  if fence == 1 then
    local now = redis.call('TIME')
    fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
    redis.call('SET', KEYS[2], string.format('%.0f', fence))
  end
  redis.call('PTTL', KEYS[1])
  return {1, fence}
end
return {0, redis.call('PTTL', KEYS[1])}
