-- Take a mutex over whoever holds it.
-- KEYS[1]  lock key
-- KEYS[2]  fencing counter
-- ARGV[1]  owner token
-- ARGV[2]  ttl in ms
-- Returns  fencingToken (string), advanced as in acquire.lua. The overwrite notifies the
-- previous holder's connection; the closing read arms the lock key for the new holder.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local fence = string.format('%.0f', math.max(last + 1, floor))
redis.call('SET', KEYS[2], fence)
redis.call('PTTL', KEYS[1])
return fence
