-- Read the changes an observer has not seen yet.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream
-- ARGV[1]  id of the last entry seen, or '' to start from the latest entry
-- ARGV[2]  most entries to return
-- ARGV[3]  approximate log length
-- Returns  {entries, pttl}: entries as XRANGE returns them; pttl of the leader key (-2 if none),
--          after which the observer looks again (an expiry is not pushed in time).
-- A leader whose key expired without resigning is logged as vacant here, so observers agree.
if redis.call('EXISTS', KEYS[1]) == 0 then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  if last and last[2][2] ~= 'vacant' then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', 'vacant', 'fence', last[2][4], 'value', '')
  end
end
local entries
if ARGV[1] == '' then
  entries = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
else
  entries = redis.call('XRANGE', KEYS[2], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
end
return {entries, redis.call('PTTL', KEYS[1])}
