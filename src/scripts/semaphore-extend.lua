-- Extend the permits of one semaphore lease if all of them are still held and unexpired.
-- KEYS[1]  holders sorted set
-- ARGV[1]  owner token
-- ARGV[2]  permits held
-- ARGV[3]  ttl in ms
-- Returns  1 when extended; 0 when any permit is gone or expired (server time), after removing
--          whatever is left of this lease, so that a half-lost lease frees its other permits.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 1, n do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':' .. i)
  if not score or tonumber(score) <= now then
    for j = 1, n do
      redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. j)
    end
    return 0
  end
end
for i = 1, n do
  redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1] .. ':' .. i)
end
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
