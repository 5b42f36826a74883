-- Read the changes an observer has not seen yet.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream
-- ARGV[1]  id of the last entry seen, or '' to start from the latest entry
-- ARGV[2]  most entries to return
-- ARGV[3]  approximate log length
-- Returns  {entries, pttl}: entries as XRANGE returns them; pttl of the leader key (-2 if none),
--          after which the observer looks again (an expiry is not pushed in time).
-- A leader whose key expired without resigning is logged as vacant here, so observers agree; the
-- log then expires IDLE_MS later, as after a resignation.
--- @include "idle"
if redis.call('EXISTS', KEYS[1]) == 0 then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  if last and last[2][2] ~= 'vacant' then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', 'vacant', 'fence', last[2][4], 'value', '')
    redis.call('PEXPIRE', KEYS[2], IDLE_MS)
  end
end
-- Whether stream id `a` comes before id `b` ('<ms>-<seq>').
local function before(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  if not ams or not bms then
    return false
  end
  ams, bms = tonumber(ams), tonumber(bms)
  return ams < bms or (ams == bms and tonumber(aseq) < tonumber(bseq))
end
local entries
if ARGV[1] == '' then
  entries = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
else
  entries = redis.call('XRANGE', KEYS[2], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
  -- Within one log, ids only grow. A log whose last id is below the last one seen is a new log,
  -- started after the old one expired by a server clock that has since gone back: read it all.
  if #entries == 0 then
    local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
    if last and before(last[1], ARGV[1]) then
      entries = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', ARGV[2])
    end
  end
end
return {entries, redis.call('PTTL', KEYS[1])}
