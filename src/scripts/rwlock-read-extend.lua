-- Extend a read lease if it is still held and unexpired (server time).
-- KEYS[1]  readers sorted set
-- ARGV[1]  reader token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended, 0 when gone or expired (then it is removed).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
