-- The server's clock in ms, `max` (ARGV[1]: most members returned per sorted set), and live():
-- sorted sets scored by expiry (server ms) hold expired members until the next write sweeps them,
-- so only the live ones are returned, the first `max` of them.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local function live(key)
  local first = redis.call('ZCOUNT', key, '-inf', now)
  return redis.call('ZRANGE', key, first, first + max - 1, 'WITHSCORES')
end
