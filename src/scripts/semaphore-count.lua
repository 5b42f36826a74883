-- Count the permits in use (unexpired by server time). Read-only.
-- KEYS[1]  holders sorted set
-- Returns  the number of unexpired permits.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
