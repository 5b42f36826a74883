-- End a term: delete the leader key if this candidate still leads, and log the vacancy.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream (expires IDLE_MS after this, unless a new term begins)
-- ARGV[1]  token
-- ARGV[2]  approximate log length
-- Returns  1 when it was leader, 0 otherwise.
--- @include "idle"
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
local fence = redis.call('HGET', KEYS[1], 'fence')
redis.call('DEL', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', 'vacant', 'fence', fence, 'value', '')
redis.call('PEXPIRE', KEYS[2], IDLE_MS)
return 1
