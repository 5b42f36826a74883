-- Extend a term if this candidate still leads.
-- KEYS[1]  leader hash
-- KEYS[2]  change log stream
-- ARGV[1]  token
-- ARGV[2]  ttl in ms
-- Returns  1 when extended, 0 when no longer leader.
-- The log must outlive the term (a new observer reads its latest entry; a campaign after the
-- leader's expiry logs the vacancy). Its expiry is moved to IDLE_MS past the term's end whenever
-- less than IDLE_MS / 2 remains past it, not on every extension: a write to the log wakes every
-- observer, once per IDLE_MS / 2 this way. The leader hash remembers when the log expires
-- (logexpiry), so that the log itself is never read here: a read would arm it for the leader.
-- The PEXPIRE disarms tracking of the leader key; the closing read arms it again, so the leader
-- keeps hearing of a takeover after its first extension (on every server line).
--- @include "idle"
local leader = redis.call('HMGET', KEYS[1], 'token', 'logexpiry')
if leader[1] == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local t = redis.call('TIME')
  local ends = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
  if (tonumber(leader[2]) or 0) < ends + IDLE_MS / 2 then
    local logexpiry = string.format('%.0f', ends + IDLE_MS)
    redis.call('HSET', KEYS[1], 'logexpiry', logexpiry)
    redis.call('PEXPIREAT', KEYS[2], logexpiry)
  end
  redis.call('EXISTS', KEYS[1])
  return 1
end
return 0
