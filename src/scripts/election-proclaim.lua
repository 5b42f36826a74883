-- Change the leader's value during its term.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream
-- ARGV[1]  token
-- ARGV[2]  new value
-- ARGV[3]  approximate log length
-- Returns  1 when proclaimed, 0 when no longer leader.
-- XADD keeps the log's expiry, but creates a log without one when it was gone (deleted by hand):
-- it gets the expiry the leader hash remembers, or IDLE_MS past the term's end.
--- @include "idle"
local leader = redis.call('HMGET', KEYS[1], 'token', 'fence', 'logexpiry')
if leader[1] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', 'proclaimed', 'fence', leader[2], 'value', ARGV[2])
local logexpiry = leader[3]
if not logexpiry then
  local t = redis.call('TIME')
  local ends = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + math.max(0, redis.call('PTTL', KEYS[1]))
  logexpiry = string.format('%.0f', ends + IDLE_MS)
  redis.call('HSET', KEYS[1], 'logexpiry', logexpiry)
end
redis.call('PEXPIREAT', KEYS[2], logexpiry)
return 1
