-- Change the leader's value during its term.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream
-- ARGV[1]  token
-- ARGV[2]  new value
-- ARGV[3]  approximate log length
-- Returns  1 when proclaimed, 0 when no longer leader.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
local fence = redis.call('HGET', KEYS[1], 'fence')
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', 'proclaimed', 'fence', fence, 'value', ARGV[2])
return 1
